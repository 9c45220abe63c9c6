"""Held-out answers for calibrating ``attncourse similarity``: independent students, one idiom.

Written apart from the case tables and the solution, each as a different student would write
the four coding parts of ``attention_variants`` (Parts 5, 7, 10 and 13) from the task's text:
several converge on the natural idiom (``torch.einsum`` for MyMHA and for the reduced
matrices, ``np.tile`` and an SVD for GQA_2_MLA), with their own names, order and comments,
the way a class does. None is a copy or an edit of another; ``tests/unit/test_similarity.py``
checks every one is a correct answer. ``POOL[part]`` is {student: answer cell}.
"""

MHA_DOC = '''class MyMHA(nn.Module):
    """Multi-head attention of x (B, L_1, D_1) over y (B, L_2, D_2); returns (B, L_1, D_1).

    Attributes: D_1, D_2, D_qk, D_v, H and the bias-free nn.Linear projections
    W_Q (weight (H*D_qk, D_1)), W_K (H*D_qk, D_2), W_V (H*D_v, D_2), W_O (D_1, H*D_v).
    """
'''

GQA_DOC = '''class MyGQA(nn.Module):
    """Grouped-query attention of x (B, L_1, D_1) over y (B, L_2, D_2); returns (B, L_1, D_1).

    Query head h uses key/value head h mod G. Attributes: D_1, D_2, D_qk, D_v, H, G and the
    bias-free projections W_Q (H*D_qk, D_1), W_K (G*D_qk, D_2), W_V (G*D_v, D_2), W_O (D_1, H*D_v).
    """
'''

MLA_DOC = '''def GQA_2_MLA(W_M_GQA):
    """Factor D/r stacked copies of W_M_GQA (r, D) as W_UM_MLA (D, r) @ W_DKV_MLA (r, D).

    Prints both shapes and the reconstruction's mean-squared error; returns (W_DKV_MLA, W_UM_MLA).
    """
'''

REDUCED_DOC = '''def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    """Reduced MLA matrices of Part 12.

    W_DKV (r, D), W_UK (D, r), W_UV (D, r), W_Q (D, D), W_O (D, D), H heads of size d = D/H.
    Returns W_K_MLA_hat (r, D), W_V_MLA_hat (r, D), W_Q_MLA_hat (H*r, D), W_O_MLA_hat (D, H*r).
    """
'''

MHA = {
    "ines": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        q = self.W_Q(x).reshape(B, L_1, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        k = self.W_K(y).reshape(B, L_2, self.H, self.D_qk)  # (B, L_2, H, D_qk)
        v = self.W_V(y).reshape(B, L_2, self.H, self.D_v)  # (B, L_2, H, D_v)
        scores = torch.einsum("bihd,bjhd->bhij", q, k) / self.D_qk**0.5  # (B, H, L_1, L_2)
        attn = torch.softmax(scores, dim=-1)  # (B, H, L_1, L_2)
        out = torch.einsum("bhij,bjhd->bihd", attn, v)  # (B, L_1, H, D_v)
        out = out.reshape(B, L_1, self.H * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(out)  # (B, L_1, D_1)
""",
    "jonas": """class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)  # (H*D_qk, D_1)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)  # (H*D_qk, D_2)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)  # (H*D_v, D_2)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)  # (D_1, H*D_v)

    def forward(self, x, y):
        batch, n_q = x.shape[0], x.shape[1]
        n_k = y.shape[1]
        Q = self.W_Q(x).view(batch, n_q, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        K = self.W_K(y).view(batch, n_k, self.H, self.D_qk)  # (B, L_2, H, D_qk)
        V = self.W_V(y).view(batch, n_k, self.H, self.D_v)  # (B, L_2, H, D_v)
        logits = torch.einsum("bqhd,bkhd->bhqk", Q, K)  # (B, H, L_1, L_2)
        weights = (logits / (self.D_qk ** 0.5)).softmax(dim=-1)  # (B, H, L_1, L_2)
        heads = torch.einsum("bhqk,bkhd->bqhd", weights, V)  # (B, L_1, H, D_v)
        return self.W_O(heads.reshape(batch, n_q, -1))  # (B, L_1, D_1)
""",
    "kofi": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.W_Q = nn.Linear(self.D_1, self.H * self.D_qk, bias=False)
        self.W_K = nn.Linear(self.D_2, self.H * self.D_qk, bias=False)
        self.W_V = nn.Linear(self.D_2, self.H * self.D_v, bias=False)
        self.W_O = nn.Linear(self.H * self.D_v, self.D_1, bias=False)

    def forward(self, x, y):
        B = x.shape[0]
        # split the last dimension into heads, heads before positions
        q = self.W_Q(x).view(B, -1, self.H, self.D_qk).permute(0, 2, 1, 3)  # (B, H, L_1, D_qk)
        k = self.W_K(y).view(B, -1, self.H, self.D_qk).permute(0, 2, 1, 3)  # (B, H, L_2, D_qk)
        v = self.W_V(y).view(B, -1, self.H, self.D_v).permute(0, 2, 1, 3)  # (B, H, L_2, D_v)
        s = torch.einsum("bhid,bhjd->bhij", q, k) / (self.D_qk ** 0.5)  # (B, H, L_1, L_2)
        a = torch.softmax(s, dim=-1)  # (B, H, L_1, L_2)
        o = torch.einsum("bhij,bhjd->bhid", a, v)  # (B, H, L_1, D_v)
        o = o.permute(0, 2, 1, 3).reshape(B, -1, self.H * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(o)  # (B, L_1, D_1)
""",
    "lena": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2 = D_1, D_2
        self.D_qk, self.D_v = D_qk, D_v
        self.H = H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        q = self.W_Q(x).unflatten(-1, (self.H, self.D_qk))  # (B, L_1, H, D_qk)
        k = self.W_K(y).unflatten(-1, (self.H, self.D_qk))  # (B, L_2, H, D_qk)
        v = self.W_V(y).unflatten(-1, (self.H, self.D_v))  # (B, L_2, H, D_v)
        att = torch.einsum("blhd,bmhd->bhlm", q * self.D_qk ** -0.5, k)  # (B, H, L_1, L_2)
        att = att.softmax(-1)  # (B, H, L_1, L_2), rows sum to 1
        z = torch.einsum("bhlm,bmhd->blhd", att, v).flatten(2)  # (B, L_1, H*D_v)
        return self.W_O(z)  # (B, L_1, D_1)
""",
    "mateo": """class MyMHA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        # stacked projections, heads along the output features
        self.W_Q = nn.Linear(D_1, D_qk * H, bias=False)
        self.W_K = nn.Linear(D_2, D_qk * H, bias=False)
        self.W_V = nn.Linear(D_2, D_v * H, bias=False)
        self.W_O = nn.Linear(D_v * H, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, D_1 = x.size()
        _, L_2, D_2 = y.size()
        Q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_1, D_qk)
        K = self.W_K(y).view(B, L_2, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_2, D_qk)
        V = self.W_V(y).view(B, L_2, self.H, self.D_v).transpose(1, 2)  # (B, H, L_2, D_v)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.D_qk ** 0.5)  # (B, H, L_1, L_2)
        probs = torch.softmax(scores, dim=-1)  # (B, H, L_1, L_2)
        context = torch.matmul(probs, V)  # (B, H, L_1, D_v)
        context = context.transpose(1, 2).contiguous().view(B, L_1, self.H * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(context)  # (B, L_1, D_1)
""",
    "nadia": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        H, d_k, d_v = self.H, self.D_qk, self.D_v
        q = self.W_Q(x).reshape(B, L_1, H, d_k).transpose(1, 2)  # (B, H, L_1, D_qk)
        k = self.W_K(y).reshape(B, L_2, H, d_k).transpose(1, 2)  # (B, H, L_2, D_qk)
        v = self.W_V(y).reshape(B, L_2, H, d_v).transpose(1, 2)  # (B, H, L_2, D_v)
        a = (q @ k.transpose(2, 3) / d_k ** 0.5).softmax(dim=-1)  # (B, H, L_1, L_2)
        o = (a @ v).transpose(1, 2).reshape(B, L_1, H * d_v)  # (B, L_1, H*D_v)
        return self.W_O(o)  # (B, L_1, D_1)
""",
    "oskar": """class MyMHA(nn.Module):
    \"\"\"Multi-head attention, heads batched with torch.bmm.\"\"\"

    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.H = H
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)

    def forward(self, x, y):
        n, t, _ = x.shape
        s = y.shape[1]
        h = self.H
        # fold the heads into the batch: (B*H, L, size)
        q = self.W_Q(x).view(n, t, h, -1).permute(0, 2, 1, 3).reshape(n * h, t, self.D_qk)
        k = self.W_K(y).view(n, s, h, -1).permute(0, 2, 1, 3).reshape(n * h, s, self.D_qk)
        v = self.W_V(y).view(n, s, h, -1).permute(0, 2, 1, 3).reshape(n * h, s, self.D_v)
        w = torch.bmm(q, k.transpose(1, 2)) * self.D_qk ** -0.5  # (B*H, L_1, L_2)
        w = nn.functional.softmax(w, dim=2)  # (B*H, L_1, L_2)
        out = torch.bmm(w, v).view(n, h, t, self.D_v)  # (B, H, L_1, D_v)
        out = out.permute(0, 2, 1, 3).reshape(n, t, h * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(out)  # (B, L_1, D_1)
""",
    "priya": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        B, L_2, _ = y.shape
        Q = self.W_Q(x).view(B, L_1, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        K = self.W_K(y).view(B, L_2, self.H, self.D_qk)  # (B, L_2, H, D_qk)
        V = self.W_V(y).view(B, L_2, self.H, self.D_v)  # (B, L_2, H, D_v)
        A = torch.einsum("bihd,bjhd->bhij", Q, K)  # (B, H, L_1, L_2)
        A = torch.softmax(A / torch.sqrt(torch.tensor(self.D_qk)), dim=-1)  # (B, H, L_1, L_2)
        O = torch.einsum("bhij,bjhd->bihd", A, V)  # (B, L_1, H, D_v)
        O = O.reshape(B, L_1, -1)  # (B, L_1, H*D_v)
        return self.W_O(O)  # (B, L_1, D_1)
""",
    "quinn": MHA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H = D_1, D_2, D_qk, D_v, H
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)  # weight (H*D_qk, D_1)
        self.W_K = nn.Linear(D_2, H * D_qk, bias=False)  # weight (H*D_qk, D_2)
        self.W_V = nn.Linear(D_2, H * D_v, bias=False)  # weight (H*D_v, D_2)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)  # weight (D_1, H*D_v)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        q = self.W_Q(x).view(B, L_1, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        k = self.W_K(y).view(B, L_2, self.H, self.D_qk)  # (B, L_2, H, D_qk)
        v = self.W_V(y).view(B, L_2, self.H, self.D_v)  # (B, L_2, H, D_v)
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.D_qk**0.5  # (B, H, L_1, L_2)
        alpha = logits.softmax(dim=-1)  # (B, H, L_1, L_2)
        o = torch.einsum("bhqk,bkhd->bqhd", alpha, v).reshape(B, L_1, -1)  # (B, L_1, H*D_v)
        return self.W_O(o)  # (B, L_1, D_1)
""",
}

GQA = {
    "ines": GQA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.G = G
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, G * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, G * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        q = self.W_Q(x).reshape(B, L_1, self.H, self.D_qk)  # (B, L_1, H, D_qk)
        k = self.W_K(y).reshape(B, L_2, self.G, self.D_qk)  # (B, L_2, G, D_qk)
        v = self.W_V(y).reshape(B, L_2, self.G, self.D_v)  # (B, L_2, G, D_v)
        k = k.repeat(1, 1, self.H // self.G, 1)  # (B, L_2, H, D_qk), head h gets h mod G
        v = v.repeat(1, 1, self.H // self.G, 1)  # (B, L_2, H, D_v)
        scores = torch.einsum("bihd,bjhd->bhij", q, k) / self.D_qk**0.5  # (B, H, L_1, L_2)
        attn = torch.softmax(scores, dim=-1)  # (B, H, L_1, L_2)
        out = torch.einsum("bhij,bjhd->bihd", attn, v)  # (B, L_1, H, D_v)
        return self.W_O(out.reshape(B, L_1, self.H * self.D_v))  # (B, L_1, D_1)
""",
    "jonas": """class MyGQA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H, self.G = D_1, D_2, D_qk, D_v, H, G
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)  # (H*D_qk, D_1)
        self.W_K = nn.Linear(D_2, G * D_qk, bias=False)  # (G*D_qk, D_2)
        self.W_V = nn.Linear(D_2, G * D_v, bias=False)  # (G*D_v, D_2)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)  # (D_1, H*D_v)

    def forward(self, x, y):
        batch, n_q = x.shape[0], x.shape[1]
        n_k = y.shape[1]
        groups = self.H // self.G
        # head h = c*G + g: split H as (groups, G) so g = h mod G
        Q = self.W_Q(x).view(batch, n_q, groups, self.G, self.D_qk)  # (B, L_1, H/G, G, D_qk)
        K = self.W_K(y).view(batch, n_k, self.G, self.D_qk)  # (B, L_2, G, D_qk)
        V = self.W_V(y).view(batch, n_k, self.G, self.D_v)  # (B, L_2, G, D_v)
        logits = torch.einsum("bqcgd,bkgd->bcgqk", Q, K)  # (B, H/G, G, L_1, L_2)
        weights = (logits / (self.D_qk ** 0.5)).softmax(dim=-1)  # (B, H/G, G, L_1, L_2)
        heads = torch.einsum("bcgqk,bkgd->bqcgd", weights, V)  # (B, L_1, H/G, G, D_v)
        return self.W_O(heads.reshape(batch, n_q, -1))  # (B, L_1, D_1)
""",
    "kofi": GQA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.G = G
        self.W_Q = nn.Linear(self.D_1, self.H * self.D_qk, bias=False)
        self.W_K = nn.Linear(self.D_2, self.G * self.D_qk, bias=False)
        self.W_V = nn.Linear(self.D_2, self.G * self.D_v, bias=False)
        self.W_O = nn.Linear(self.H * self.D_v, self.D_1, bias=False)

    def forward(self, x, y):
        B = x.shape[0]
        q = self.W_Q(x).view(B, -1, self.H, self.D_qk).permute(0, 2, 1, 3)  # (B, H, L_1, D_qk)
        k = self.W_K(y).view(B, -1, self.G, self.D_qk).permute(0, 2, 1, 3)  # (B, G, L_2, D_qk)
        v = self.W_V(y).view(B, -1, self.G, self.D_v).permute(0, 2, 1, 3)  # (B, G, L_2, D_v)
        idx = torch.arange(self.H, device=x.device) % self.G  # (H,) key/value head of each query head
        k = k[:, idx]  # (B, H, L_2, D_qk)
        v = v[:, idx]  # (B, H, L_2, D_v)
        s = torch.einsum("bhid,bhjd->bhij", q, k) / (self.D_qk ** 0.5)  # (B, H, L_1, L_2)
        a = torch.softmax(s, dim=-1)  # (B, H, L_1, L_2)
        o = torch.einsum("bhij,bhjd->bhid", a, v)  # (B, H, L_1, D_v)
        o = o.permute(0, 2, 1, 3).reshape(B, -1, self.H * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(o)  # (B, L_1, D_1)
""",
    "lena": GQA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1, self.D_2 = D_1, D_2
        self.D_qk, self.D_v = D_qk, D_v
        self.H, self.G = H, G
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, G * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, G * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        copies = self.H // self.G
        q = self.W_Q(x).unflatten(-1, (copies, self.G, self.D_qk))  # (B, L_1, H/G, G, D_qk)
        k = self.W_K(y).unflatten(-1, (self.G, self.D_qk))  # (B, L_2, G, D_qk)
        v = self.W_V(y).unflatten(-1, (self.G, self.D_v))  # (B, L_2, G, D_v)
        att = torch.einsum("blcgd,bmgd->bcglm", q * self.D_qk ** -0.5, k)  # (B, H/G, G, L_1, L_2)
        att = att.softmax(-1)  # (B, H/G, G, L_1, L_2)
        z = torch.einsum("bcglm,bmgd->blcgd", att, v).flatten(2)  # (B, L_1, H*D_v)
        return self.W_O(z)  # (B, L_1, D_1)
""",
    "mateo": """class MyGQA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.H = H
        self.G = G
        self.W_Q = nn.Linear(D_1, D_qk * H, bias=False)
        self.W_K = nn.Linear(D_2, D_qk * G, bias=False)
        self.W_V = nn.Linear(D_2, D_v * G, bias=False)
        self.W_O = nn.Linear(D_v * H, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, D_1 = x.size()
        _, L_2, D_2 = y.size()
        Q = self.W_Q(x).view(B, L_1, self.H, self.D_qk).transpose(1, 2)  # (B, H, L_1, D_qk)
        K = self.W_K(y).view(B, L_2, self.G, self.D_qk).transpose(1, 2)  # (B, G, L_2, D_qk)
        V = self.W_V(y).view(B, L_2, self.G, self.D_v).transpose(1, 2)  # (B, G, L_2, D_v)
        # tile the G heads H/G times: head h sees copy h mod G
        K = torch.cat([K] * (self.H // self.G), dim=1)  # (B, H, L_2, D_qk)
        V = torch.cat([V] * (self.H // self.G), dim=1)  # (B, H, L_2, D_v)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.D_qk ** 0.5)  # (B, H, L_1, L_2)
        probs = torch.softmax(scores, dim=-1)  # (B, H, L_1, L_2)
        context = torch.matmul(probs, V)  # (B, H, L_1, D_v)
        context = context.transpose(1, 2).contiguous().view(B, L_1, self.H * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(context)  # (B, L_1, D_1)
""",
    "nadia": GQA_DOC
    + """
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.D_1, self.D_2, self.D_qk, self.D_v, self.H, self.G = D_1, D_2, D_qk, D_v, H, G
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, G * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, G * D_v, bias=False)
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)

    def forward(self, x, y):
        B, L_1, _ = x.shape
        L_2 = y.shape[1]
        H, G, d_k, d_v = self.H, self.G, self.D_qk, self.D_v
        q = self.W_Q(x).reshape(B, L_1, H, d_k).transpose(1, 2)  # (B, H, L_1, D_qk)
        k = self.W_K(y).reshape(B, L_2, G, d_k).transpose(1, 2)  # (B, G, L_2, D_qk)
        v = self.W_V(y).reshape(B, L_2, G, d_v).transpose(1, 2)  # (B, G, L_2, D_v)
        k = k.repeat(1, H // G, 1, 1)  # (B, H, L_2, D_qk)
        v = v.repeat(1, H // G, 1, 1)  # (B, H, L_2, D_v)
        a = (q @ k.transpose(2, 3) / d_k ** 0.5).softmax(dim=-1)  # (B, H, L_1, L_2)
        o = (a @ v).transpose(1, 2).reshape(B, L_1, H * d_v)  # (B, L_1, H*D_v)
        return self.W_O(o)  # (B, L_1, D_1)
""",
    "oskar": """class MyGQA(nn.Module):
    def __init__(self, D_1, D_2, D_qk, D_v, H, G):
        super().__init__()
        self.H = H
        self.G = G
        self.D_1 = D_1
        self.D_2 = D_2
        self.D_qk = D_qk
        self.D_v = D_v
        self.W_O = nn.Linear(H * D_v, D_1, bias=False)
        self.W_Q = nn.Linear(D_1, H * D_qk, bias=False)
        self.W_K = nn.Linear(D_2, G * D_qk, bias=False)
        self.W_V = nn.Linear(D_2, G * D_v, bias=False)

    def forward(self, x, y):
        n, t, _ = x.shape
        s = y.shape[1]
        h, g = self.H, self.G
        q = self.W_Q(x).view(n, t, h, -1).permute(0, 2, 1, 3)  # (B, H, L_1, D_qk)
        k = self.W_K(y).view(n, s, g, -1).permute(0, 2, 1, 3)  # (B, G, L_2, D_qk)
        v = self.W_V(y).view(n, s, g, -1).permute(0, 2, 1, 3)  # (B, G, L_2, D_v)
        # expand a copies axis in front of G and merge: index c*G + g
        k = k.unsqueeze(1).expand(n, h // g, g, s, self.D_qk).reshape(n, h, s, self.D_qk)
        v = v.unsqueeze(1).expand(n, h // g, g, s, self.D_v).reshape(n, h, s, self.D_v)
        w = torch.matmul(q, k.transpose(-1, -2)) * self.D_qk ** -0.5  # (B, H, L_1, L_2)
        w = nn.functional.softmax(w, dim=-1)  # (B, H, L_1, L_2)
        out = torch.matmul(w, v).permute(0, 2, 1, 3).reshape(n, t, h * self.D_v)  # (B, L_1, H*D_v)
        return self.W_O(out)  # (B, L_1, D_1)
""",
}

GQA_2_MLA = {
    "ines": MLA_DOC
    + """    r, D = W_M_GQA.shape
    W_M_GQA_tilde = np.tile(W_M_GQA, (D // r, 1))  # (D, D)
    U, S, Vt = np.linalg.svd(W_M_GQA_tilde)  # (D, D), (D,), (D, D)
    W_UM_MLA = U[:, :r] @ np.diag(S[:r])  # (D, r)
    W_DKV_MLA = Vt[:r, :]  # (r, D)
    print(W_UM_MLA.shape)
    print(W_DKV_MLA.shape)
    print(np.mean((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2))
    return W_DKV_MLA, W_UM_MLA
""",
    "jonas": """def GQA_2_MLA(W_M_GQA):
    r, D = W_M_GQA.shape
    # D/r copies on top of each other
    W_M_GQA_tilde = np.vstack([W_M_GQA] * (D // r))  # (D, D)
    # the copies already factor: stacked identities times one copy
    W_DKV_MLA = W_M_GQA  # (r, D)
    W_UM_MLA = np.vstack([np.eye(r)] * (D // r))  # (D, r)
    err = ((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2).mean()
    print("W_UM_MLA shape:", W_UM_MLA.shape)
    print("W_DKV_MLA shape:", W_DKV_MLA.shape)
    print("reconstruction error:", err)
    return W_DKV_MLA, W_UM_MLA
""",
    "kofi": MLA_DOC
    + """    r = W_M_GQA.shape[0]
    D = W_M_GQA.shape[1]
    tilde = np.concatenate([W_M_GQA] * (D // r), axis=0)  # (D, D)
    u, s, vh = np.linalg.svd(tilde, full_matrices=False)  # (D, D), (D,), (D, D)
    W_UM_MLA = u[:, :r]  # (D, r)
    W_DKV_MLA = np.diag(s[:r]) @ vh[:r]  # (r, D), singular values in the down-projection
    mse = np.mean(np.square(tilde - W_UM_MLA @ W_DKV_MLA))
    print(W_UM_MLA.shape, W_DKV_MLA.shape, mse)
    return W_DKV_MLA, W_UM_MLA
""",
    "lena": MLA_DOC
    + """    r, D = W_M_GQA.shape
    W_M_GQA_tilde = np.tile(W_M_GQA, (D // r, 1))  # (D, D)
    Q, R = np.linalg.qr(W_M_GQA.T)  # Q (D, r), R (r, r): W_M_GQA = R.T @ Q.T
    W_DKV_MLA = Q.T  # (r, D), orthonormal rows
    W_UM_MLA = np.tile(R.T, (D // r, 1))  # (D, r)
    print("W_UM_MLA", W_UM_MLA.shape)
    print("W_DKV_MLA", W_DKV_MLA.shape)
    print("MSE", np.mean((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2))
    return W_DKV_MLA, W_UM_MLA
""",
    "mateo": """def GQA_2_MLA(W_M_GQA):
    r, D = W_M_GQA.shape
    n_copies = D // r
    W_tilde = np.tile(W_M_GQA, (n_copies, 1))  # (D, D)
    U, sigma, VT = np.linalg.svd(W_tilde)  # (D, D), (D,), (D, D)
    root = np.sqrt(sigma[:r])  # (r,)
    W_UM_MLA = U[:, :r] * root  # (D, r)
    W_DKV_MLA = root[:, None] * VT[:r, :]  # (r, D)
    print(f"shape of W_UM_MLA: {W_UM_MLA.shape}")
    print(f"shape of W_DKV_MLA: {W_DKV_MLA.shape}")
    print(f"reconstruction error: {np.mean((W_tilde - W_UM_MLA @ W_DKV_MLA) ** 2)}")
    return W_DKV_MLA, W_UM_MLA
""",
    "nadia": MLA_DOC
    + """    r, D = W_M_GQA.shape
    W_M_GQA_tilde = np.tile(W_M_GQA, (D // r, 1))  # (D, D)
    W_DKV_MLA = W_M_GQA.copy()  # (r, D): the rows of one copy span the row space
    W_UM_MLA = W_M_GQA_tilde @ np.linalg.pinv(W_DKV_MLA)  # (D, r)
    error = np.mean((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2)
    print(W_UM_MLA.shape)
    print(W_DKV_MLA.shape)
    print(error)
    return W_DKV_MLA, W_UM_MLA
""",
    "oskar": """def GQA_2_MLA(W_M_GQA):
    \"\"\"Factor the tiled GQA matrix with an SVD of one copy.\"\"\"
    r, D = W_M_GQA.shape
    W_M_GQA_tilde = np.kron(np.ones((D // r, 1)), W_M_GQA)  # (D, D)
    u, s, vt = np.linalg.svd(W_M_GQA, full_matrices=False)  # (r, r), (r,), (r, D)
    W_DKV_MLA = vt  # (r, D)
    W_UM_MLA = np.kron(np.ones((D // r, 1)), u * s)  # (D, r)
    print("W_UM_MLA:", W_UM_MLA.shape, "W_DKV_MLA:", W_DKV_MLA.shape)
    print("mean squared error:", np.mean((W_M_GQA_tilde - W_UM_MLA @ W_DKV_MLA) ** 2))
    return W_DKV_MLA, W_UM_MLA
""",
}

REDUCED = {
    "ines": REDUCED_DOC
    + """    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV  # (r, D)
    W_V_MLA_hat = W_DKV  # (r, D)
    W_Q_MLA_hat = (r / d) ** 0.5 * torch.einsum("hdr,hdk->hrk", W_UK.reshape(H, d, r), W_Q.reshape(H, d, D)).reshape(H * r, D)  # (H*r, D)
    W_O_MLA_hat = torch.einsum("khd,hdr->khr", W_O.reshape(D, H, d), W_UV.reshape(H, d, r)).reshape(D, H * r)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "jonas": """def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    r = W_DKV.shape[0]
    D = W_DKV.shape[1]
    d = D // H
    W_K_MLA_hat = W_DKV.clone()  # (r, D)
    W_V_MLA_hat = W_DKV.clone()  # (r, D)
    # head h: sqrt(r/d) W_UK_h^T W_Q_h
    W_Q_MLA_hat = torch.einsum("hir,hiD->hrD", W_UK.view(H, d, r), W_Q.view(H, d, D)).reshape(H * r, D) * (r / d) ** 0.5  # (H*r, D)
    # head h: W_O_h W_UV_h
    W_O_MLA_hat = torch.einsum("Dhi,hir->Dhr", W_O.view(D, H, d), W_UV.view(H, d, r)).reshape(D, H * r)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "kofi": REDUCED_DOC
    + """    r, D = W_DKV.shape
    d = D // H
    scale = (r / d) ** 0.5
    W_K_MLA_hat = W_DKV  # (r, D)
    W_V_MLA_hat = W_DKV  # (r, D)
    W_Q_MLA_hat = scale * (W_UK.view(H, d, r).transpose(1, 2) @ W_Q.view(H, d, D)).reshape(H * r, D)  # (H, r, D) -> (H*r, D)
    W_O_MLA_hat = (W_O.view(D, H, d).permute(1, 0, 2) @ W_UV.view(H, d, r)).permute(1, 0, 2).reshape(D, H * r)  # (H, D, r) -> (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "lena": REDUCED_DOC
    + """    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV  # (r, D)
    W_V_MLA_hat = W_DKV  # (r, D)
    W_Q_MLA_hat = torch.einsum("adr,adx->arx", W_UK.unflatten(0, (H, d)), W_Q.unflatten(0, (H, d))).flatten(0, 1) * (r / d) ** 0.5  # (H*r, D)
    W_O_MLA_hat = torch.einsum("xad,adr->xar", W_O.unflatten(1, (H, d)), W_UV.unflatten(0, (H, d))).flatten(1)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "mateo": """def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV  # (r, D) shared key projection
    W_V_MLA_hat = W_DKV  # (r, D) shared value projection
    # block-diagonal W_UK^T (H*r, D) times W_Q (D, D), scaled so the logits match
    W_Q_MLA_hat = torch.block_diag(*W_UK.T.reshape(r, H, d).transpose(0, 1)) @ W_Q * torch.sqrt(torch.tensor(r / d))  # (H*r, D)
    W_O_MLA_hat = W_O @ torch.block_diag(*W_UV.reshape(H, d, r))  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "nadia": REDUCED_DOC
    + """    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV.clone()  # (r, D)
    W_V_MLA_hat = W_DKV.clone()  # (r, D)
    W_Q_MLA_hat = (torch.bmm(W_UK.reshape(H, d, r).transpose(1, 2), W_Q.reshape(H, d, D)) * (r / d) ** 0.5).reshape(H * r, D)  # (H*r, D)
    W_O_MLA_hat = torch.bmm(W_O.reshape(D, H, d).transpose(0, 1), W_UV.reshape(H, d, r)).transpose(0, 1).reshape(D, H * r)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "oskar": """def reduced_matrices(W_DKV, W_UK, W_UV, W_Q, W_O, H):
    \"\"\"Fold W_UK into the queries and W_UV into the output, head by head (einsum).\"\"\"
    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV  # (r, D)
    W_V_MLA_hat = W_DKV  # (r, D)
    W_Q_MLA_hat = torch.einsum("hjr,hjc->hrc", W_UK.view(H, d, r) * (r / d) ** 0.5, W_Q.view(H, d, D)).reshape(-1, D)  # (H*r, D)
    W_O_MLA_hat = torch.einsum("chj,hjr->chr", W_O.view(D, H, d), W_UV.view(H, d, r)).reshape(D, -1)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
    "quinn": REDUCED_DOC
    + """    r, D = W_DKV.shape
    d = D // H
    W_K_MLA_hat = W_DKV  # (r, D)
    W_V_MLA_hat = W_DKV  # (r, D)
    # W_UK_h^T W_Q_h for each head h, stacked, times sqrt(r/d)
    W_Q_MLA_hat = torch.einsum("hdr,hdx->hrx", W_UK.view(H, d, r), W_Q.view(H, d, D)).reshape(H * r, D) * (r / d) ** 0.5  # (H*r, D)
    # W_O_h W_UV_h for each head h, side by side
    W_O_MLA_hat = torch.einsum("xhd,hdr->xhr", W_O.view(D, H, d), W_UV.view(H, d, r)).reshape(D, H * r)  # (D, H*r)
    return W_K_MLA_hat, W_V_MLA_hat, W_Q_MLA_hat, W_O_MLA_hat
""",
}

POOL = {
    "p5_mha": MHA,
    "p7_gqa": GQA,
    "p10_gqa_2_mla": GQA_2_MLA,
    "p13_reduced_matrices": REDUCED,
}
