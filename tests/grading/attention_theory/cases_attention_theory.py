"""Alternative correct answers and named wrong answers for assignment 2 (attention theory and lab).

Same layout as ``cases_attention_worksheet`` (see ``casetable``): each row replaces answer cells of
the solution and names the test cells that must then fail.
"""

from casetable import cases_table

ASSIGNMENT = "attention_theory"

GROUPS = {
    "c": (("c_answer",), ("c_query_for_average",)),
    "d": (("d_answer",), ("d_recovery_matrix",)),
    "e": (("e_answer",), ("e_query_for_noisy_keys",)),
    "f": (("f_answer",), ("f_sample_keys", "f_simulation_statistics")),
    "lab_attention": (("lab_attention_answer",), ("lab_attention",)),
    "lab_distribution": (("lab_distribution_answer",), ("lab_weights_distribution",)),
    "lab_sharpen": (("lab_sharpen_answer",), ("lab_sharpen_weights",)),
    "lab_pair": (("lab_pair_answer",), ("lab_pair_distance",)),
    "lab_recovery": (("lab_recovery_answer",), ("lab_recovery_errors",)),
    "lab_noise": (("lab_noise_answer",), ("lab_noise_sweep",)),
}

# The course's instance and plots, and the student's plot of (f): they only draw or print.
# The own_attention cases of (b) and (e) call the student's lab attention: a wrong attention
# packed beside them would cost their test, so the packing keeps the two apart.
DEPENDS = {
    "lab_sharpen_weights": ("lab_attention_answer",),
    "lab_noise_sweep": ("lab_attention_answer",),
}

DISPLAY_ONLY = {
    "f_instance",
    "f_plot",
    "lab_distribution_demo",
    "lab_peak_plot",
    "lab_cd_demo",
    "lab_noise_plot",
}


def fn(signature, body):
    """An answer cell defining one function; ``body`` lines are indented here."""
    lines = "\n".join(f"    {line}" for line in body.strip("\n").split("\n"))
    return f"def {signature}:\n{lines}\n"


def c_query(body):
    return fn("query_for_average(K, i, j)", body)


def d_matrix(body):
    return fn("recovery_matrix(S, T)", body)


def e_query(body):
    return fn("query_for_noisy_keys(mu, i, j, eps)", body)


SIMULATE = fn(
    "simulate_outputs(mu, V, q, eps, x, n_samples, generator)",
    "keys = sample_keys(mu, eps, x, n_samples, generator)\n"
    "return torch.softmax(keys @ q, dim=-1) @ V",
)


def f_keys(body, simulate=SIMULATE):
    return fn("sample_keys(mu, eps, x, n_samples, generator)", body) + "\n\n" + simulate


F_NOISE = (
    "n, d = mu.shape\n"
    "keys = mu + eps**0.5 * torch.randn(n_samples, n, d, generator=generator, dtype=mu.dtype)\n"
)
F_SOLUTION_KEYS = (
    F_NOISE + "z = torch.randn(n_samples, 1, generator=generator, dtype=mu.dtype)\n"
    "keys[:, x] += z * mu[x] / 2**0.5\nreturn keys"
)


def attention(body):
    return fn("attention(Q, K, V)", body)


def distribution(body):
    return fn("is_distribution(A, tol=1e-6)", body)


def sharpen(body):
    return fn("weights_along(K, u, betas)", body)


def pair(body):
    return fn("pair_distance(A, I, J)", body)


def recovery(body):
    return fn("recovery_errors(C, M, V)", body)


def noise(body):
    return fn("noisy_key_errors(mu, i, j, queries, eps_values, n_samples, generator)", body)


NOISE_KEYS = (
    "n, d = mu.shape\n"
    "z = torch.randn(len(eps_values), n_samples, n, d, generator=generator, dtype=mu.dtype)\n"
)
NOISE_TARGET = "t = torch.zeros(n, dtype=mu.dtype)\nt[i] = 0.5\nt[j] = 0.5\n"
NOISE_WEIGHTS = "alpha = torch.softmax((keys @ queries[:, None, :, None])[..., 0], -1)\n"

ROWS = [
    # (c) query for the average of two values, orthonormal keys
    ("c", "stacked_rows", c_query("return 50 * K[[i, j]].sum(0)"), ()),
    ("c", "uniform_shift", c_query("return 30 * (K[i] + K[j]) + 5 * K.sum(0)"), ()),
    (
        "c",
        "component_off_the_keys",
        c_query(
            "P = torch.eye(K.shape[1], dtype=K.dtype) - K.T @ K\nreturn 25 * (K[i] + K[j]) + P @ torch.ones(K.shape[1], dtype=K.dtype)"
        ),
        (),
    ),
    ("c", "huge_scale", c_query("return 1e4 * (K[i] + K[j])"), ()),
    (  # any beta large enough: (n - 2) e^-beta / 2 <= 1e-3 for beta = log(1e4 n)
        "c",
        "beta_from_n",
        c_query("return float(np.log(1e4 * K.shape[0])) * (K[i] + K[j])"),
        (),
    ),
    (
        "c",
        "preallocated_in_place",
        c_query(
            "q = torch.zeros(K.shape[1], dtype=K.dtype)\nq.add_(K[i], alpha=40.0)\n"
            "q.add_(K[j], alpha=40.0)\nreturn q"
        ),
        (),
    ),
    ("c", "scale_one", c_query("return K[i] + K[j]"), True),
    ("c", "one_key_only", c_query("return 20 * K[i]"), True),
    ("c", "difference", c_query("return 20 * (K[i] - K[j])"), True),
    ("c", "columns_not_rows", c_query("return 20 * (K[:, i] + K[:, j])"), True),
    ("c", "scale_too_small", c_query("return 3 * (K[i] + K[j])"), True),
    ("c", "negative_scale", c_query("return -20 * (K[i] + K[j])"), True),
    ("c", "unit_norm", c_query("q = K[i] + K[j]\nreturn q / q.norm()"), True),
    ("c", "all_keys", c_query("return 20 * K.sum(0)"), True),
    ("c", "off_by_one", c_query("return 20 * (K[i - 1] + K[j - 1])"), True),
    # (d) recovery matrix
    (
        "d",
        "complement_of_t",
        d_matrix("return 2 * (torch.eye(S.shape[0], dtype=S.dtype) - T @ T.T)"),
        (),
    ),
    (
        "d",
        "plus_null_part",
        d_matrix(
            "d = S.shape[0]\nP = torch.eye(d, dtype=S.dtype) - S @ S.T - T @ T.T\n"
            "return 2 * S @ S.T + P @ torch.ones(d, d, dtype=S.dtype)"
        ),
        (),
    ),
    (
        "d",
        "einsum_sum_of_outer_products",
        d_matrix("return 2 * torch.einsum('ik,jk->ij', S, S)"),
        (),
    ),
    ("d", "general_projector", d_matrix("return 2 * S @ torch.linalg.inv(S.T @ S) @ S.T"), ()),
    ("d", "pseudo_inverse", d_matrix("return 2 * S @ torch.linalg.pinv(S)"), ()),
    (
        "d",
        "qr_projector",
        d_matrix("B, _ = torch.linalg.qr(S)\nreturn 2 * torch.einsum('ik,jk->ij', B, B)"),
        (),
    ),
    ("d", "float32_matrix", d_matrix("return (2 * S @ S.T).float()"), True),
    ("d", "no_factor_two", d_matrix("return S @ S.T"), True),
    ("d", "gram_not_projector", d_matrix("return 2 * S.T @ S"), True),
    ("d", "projects_onto_t", d_matrix("return 2 * T @ T.T"), True),
    ("d", "identity", d_matrix("return torch.eye(S.shape[0], dtype=S.dtype)"), True),
    ("d", "both_subspaces", d_matrix("return 2 * (S @ S.T + T @ T.T)"), True),
    ("d", "coordinates_only", d_matrix("return 2 * S"), True),
    (
        "d",
        "column_convention_only",
        d_matrix(
            "d = S.shape[0]\nP = torch.eye(d, dtype=S.dtype) - S @ S.T - T @ T.T\n"
            "return 2 * S @ S.T + torch.ones(d, d, dtype=S.dtype) @ P"
        ),
        True,
    ),
    ("d", "halved", d_matrix("return S @ S.T / 2"), True),
    # (e) query for noisy keys
    ("e", "constant_ten", e_query("return 10 * (mu[i] + mu[j])"), ()),
    ("e", "constant_twenty", e_query("return 20.0 * mu[[i, j]].sum(0)"), ()),
    ("e", "fifth_root", e_query("return eps**-0.2 * (mu[i] + mu[j])"), ()),
    ("e", "log_scale", e_query("return -np.log(eps) * (mu[i] + mu[j])"), ()),
    (
        "e",
        "einsum_weighted_means",
        e_query(
            "w = torch.full((2,), 12.0, dtype=mu.dtype)\n"
            "return torch.einsum('k,kd->d', w, mu[[i, j]])"
        ),
        (),
    ),
    ("e", "scale_one", e_query("return mu[i] + mu[j]"), True),
    ("e", "inverse_std", e_query("return eps**-0.5 * (mu[i] + mu[j])"), True),
    ("e", "inverse_variance", e_query("return (mu[i] + mu[j]) / eps"), True),
    ("e", "one_mean_only", e_query("return 20 * mu[i]"), True),
    ("e", "difference", e_query("return 20 * (mu[i] - mu[j])"), True),
    ("e", "tiny_scale", e_query("return eps * (mu[i] + mu[j])"), True),
    ("e", "far_too_large", e_query("return 1e3 * (mu[i] + mu[j])"), True),
    ("e", "all_means", e_query("return 20 * mu.sum(0)"), True),
    # (f) sampling with the changed covariance, and the simulated outputs
    (
        "f",
        "multivariate_normal",
        f_keys(
            "n, d = mu.shape\ncov = eps * torch.eye(d, dtype=mu.dtype).repeat(n, 1, 1)\n"
            "cov[x] += torch.outer(mu[x], mu[x]) / 2\n"
            "return torch.distributions.MultivariateNormal(mu, cov).sample((n_samples,))"
        ),
        (),
    ),
    (
        "f",
        "cholesky",
        f_keys(
            "n, d = mu.shape\ncov = eps * torch.eye(d, dtype=mu.dtype).repeat(n, 1, 1)\n"
            "cov[x] += torch.outer(mu[x], mu[x]) / 2\nL = torch.linalg.cholesky(cov)\n"
            "z = torch.randn(n_samples, n, d, 1, generator=generator, dtype=mu.dtype)\n"
            "return mu + (L @ z)[..., 0]"
        ),
        (),
    ),
    (
        "f",
        "symmetric_square_root",
        f_keys(
            F_NOISE + "cov = eps * torch.eye(d, dtype=mu.dtype) + torch.outer(mu[x], mu[x]) / 2\n"
            "w, U = torch.linalg.eigh(cov)\nroot = U @ torch.diag(w.sqrt()) @ U.T\n"
            "g = torch.randn(n_samples, d, generator=generator, dtype=mu.dtype)\n"
            "keys[:, x] = mu[x] + g @ root\nreturn keys"
        ),
        (),
    ),
    (
        "f",
        "scaled_mask",
        f_keys(
            F_NOISE + "z = torch.randn(n_samples, n, 1, generator=generator, dtype=mu.dtype)\n"
            "mask = torch.zeros(n, 1, dtype=mu.dtype)\nmask[x] = 0.5**0.5\n"
            "return keys + mask * z * mu"
        ),
        (),
    ),
    (
        "f",
        "einsum_outputs",
        f_keys(
            F_SOLUTION_KEYS,
            fn(
                "simulate_outputs(mu, V, q, eps, x, n_samples, generator)",
                "keys = sample_keys(mu, eps, x, n_samples, generator)\n"
                "scores = torch.einsum('snd,d->sn', keys, q)\n"
                "w = torch.exp(scores - scores.max(-1, keepdim=True).values)\n"
                "return (w / w.sum(-1, keepdim=True)) @ V",
            ),
        ),
        (),
    ),
    (
        "f",
        "missing_half",
        f_keys(F_SOLUTION_KEYS.replace("/ 2**0.5", "")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "half_on_the_std",
        f_keys(F_SOLUTION_KEYS.replace("/ 2**0.5", "/ 2")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "eps_as_std",
        f_keys(F_SOLUTION_KEYS.replace("eps**0.5", "eps")),
        ["f_sample_keys"],
    ),
    (
        "f",
        "changed_every_key",
        f_keys(F_SOLUTION_KEYS.replace("keys[:, x] += z * mu[x]", "keys += z[:, :, None] * mu")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "changed_the_wrong_key",
        f_keys(
            F_SOLUTION_KEYS.replace("keys[:, x] += z * mu[x]", "keys[:, x - 1] += z * mu[x - 1]")
        ),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "garbled_formula",
        f_keys(F_SOLUTION_KEYS.replace("z * mu[x] / 2**0.5", "z * (mu[x] - mu[x]) / 2")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "means_not_added",
        f_keys(F_SOLUTION_KEYS.replace("keys = mu + eps", "keys = 0 * mu + eps")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    (
        "f",
        "softmax_over_draws",
        f_keys(
            F_SOLUTION_KEYS,
            SIMULATE.replace("dim=-1", "dim=0"),
        ),
        ["f_simulation_statistics"],
    ),
    (
        "f",
        "returns_weights",
        f_keys(F_SOLUTION_KEYS, SIMULATE.replace(" @ V", "")),
        ["f_simulation_statistics"],
    ),
    (
        "f",
        "one_draw_for_all",
        f_keys(F_SOLUTION_KEYS.replace("torch.randn(n_samples, 1,", "torch.randn(1, 1,")),
        ["f_sample_keys", "f_simulation_statistics"],
    ),
    # Lab 1: batched attention
    (
        "lab_attention",
        "einsum",
        attention(
            "A = torch.softmax(torch.einsum('bmd,bnd->bmn', Q, K), dim=-1)\n"
            "return torch.einsum('bmn,bnv->bmv', A, V), A"
        ),
        (),
    ),
    (
        "lab_attention",
        "float32_softmax",  # the text asks for the inputs' dtype: scores near 1e3 show it
        attention(
            "A = torch.softmax(Q @ K.transpose(-2, -1), dim=-1, dtype=torch.float32).to(Q.dtype)\n"
            "return A @ V, A"
        ),
        True,
    ),
    (
        "lab_attention",
        "manual_stable_softmax",
        attention(
            "S = Q @ K.mT\nE = torch.exp(S - S.amax(dim=-1, keepdim=True))\n"
            "A = E / E.sum(dim=-1, keepdim=True)\nreturn A @ V, A"
        ),
        (),
    ),
    (
        "lab_attention",
        "preallocated_in_place",
        attention(
            "B, m, n = Q.shape[0], Q.shape[1], K.shape[1]\n"
            "A = torch.empty(B, m, n, dtype=Q.dtype)\nC = torch.empty(B, m, V.shape[-1], dtype=Q.dtype)\n"
            "torch.matmul(Q, K.transpose(-2, -1), out=A)\nA.sub_(A.amax(-1, keepdim=True)).exp_()\n"
            "A.div_(A.sum(-1, keepdim=True))\ntorch.matmul(A, V, out=C)\nreturn C, A"
        ),
        (),
    ),
    (
        "lab_attention",
        "bmm",
        attention("A = torch.bmm(Q, K.permute(0, 2, 1)).softmax(-1)\nreturn torch.bmm(A, V), A"),
        (),
    ),
    (
        "lab_attention",
        "logsumexp",
        attention(
            "S = Q @ K.transpose(1, 2)\nA = torch.exp(S - torch.logsumexp(S, -1, keepdim=True))\nreturn A @ V, A"
        ),
        (),
    ),
    (
        "lab_attention",
        "scaled",
        attention(
            "A = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1)\nreturn A @ V, A"
        ),
        True,
    ),
    (
        "lab_attention",
        "softmax_over_queries",
        attention("A = torch.softmax(Q @ K.transpose(-2, -1), dim=1)\nreturn A @ V, A"),
        True,
    ),
    (
        "lab_attention",
        "naive_exp_overflows",
        attention(
            "E = torch.exp(Q @ K.transpose(-2, -1))\nA = E / E.sum(-1, keepdim=True)\nreturn A @ V, A"
        ),
        True,
    ),
    (
        "lab_attention",
        "fused_kernel",
        attention(
            "C = torch.nn.functional.scaled_dot_product_attention(Q, K, V, scale=1.0)\n"
            "return C, torch.softmax(Q @ K.transpose(-2, -1), -1)"
        ),
        True,
    ),
    (
        "lab_attention",
        "loop_over_batch",
        attention(
            "out = [torch.softmax(Q[b] @ K[b].T, -1) for b in range(Q.shape[0])]\n"
            "A = torch.stack(out)\nreturn A @ V, A"
        ),
        True,
    ),
    (
        "lab_attention",
        "loop_in_helper",
        "def softmax_rows(S):\n    rows = []\n    for row in S.reshape(-1, S.shape[-1]):\n"
        "        rows.append(torch.softmax(row, 0))\n    return torch.stack(rows).reshape(S.shape)\n\n\n"
        + attention("A = softmax_rows(Q @ K.transpose(-2, -1))\nreturn A @ V, A"),
        True,
    ),
    (
        "lab_attention",
        "outputs_swapped",
        attention("A = torch.softmax(Q @ K.transpose(-2, -1), -1)\nreturn A, A @ V"),
        True,
    ),
    (
        "lab_attention",
        "not_normalised",
        attention("A = torch.exp(Q @ K.transpose(-2, -1) - 700)\nreturn A @ V, A"),
        True,
    ),
    (
        "lab_attention",
        "log_softmax",
        attention("A = torch.log_softmax(Q @ K.transpose(-2, -1), -1)\nreturn A @ V, A"),
        True,
    ),
    # Lab 2: weights form a distribution
    (
        "lab_distribution",
        "allclose",
        distribution(
            "sums = A.sum(dim=-1)\n"
            "return bool(A.min() >= 0) and torch.allclose(sums, torch.ones_like(sums), rtol=0, atol=tol)"
        ),
        (),
    ),
    (
        "lab_distribution",
        "tensor_result",
        distribution("return torch.all(A >= 0) & torch.all(torch.abs(A.sum(-1) - 1) <= tol)"),
        (),
    ),
    (
        "lab_distribution",
        "isclose",
        distribution(
            "return bool(torch.isclose(A.sum(-1), torch.tensor(1.0, dtype=A.dtype), rtol=0, atol=tol).all() and (A >= 0).all())"
        ),
        (),
    ),
    (
        "lab_distribution",
        "clamp_trick",
        distribution(
            "ok_sign = torch.equal(A.clamp(min=0), A)\nok_sum = ((A.sum(-1) - 1).abs().max() <= tol).item()\nreturn ok_sign and ok_sum"
        ),
        (),
    ),
    (
        "lab_distribution",
        "only_sums",
        distribution("return bool(((A.sum(-1) - 1).abs() <= tol).all())"),
        True,
    ),
    ("lab_distribution", "only_signs", distribution("return bool((A >= 0).all())"), True),
    (
        "lab_distribution",
        "exact_equality",
        distribution("return bool((A >= 0).all() and (A.sum(-1) == 1).all())"),
        True,
    ),
    (
        "lab_distribution",
        "sums_over_columns",
        distribution("return bool((A >= 0).all() and ((A.sum(-2) - 1).abs() <= tol).all())"),
        True,
    ),
    (
        "lab_distribution",
        "tolerance_too_loose",
        distribution("return bool((A >= 0).all() and ((A.sum(-1) - 1).abs() <= 1e-2).all())"),
        True,
    ),
    (
        "lab_distribution",
        "nan_slips_through",
        distribution(
            "return not bool((A < 0).any()) and not bool(((A.sum(-1) - 1).abs() > tol).any())"
        ),
        True,
    ),
    (
        "lab_distribution",
        "total_sum",
        distribution("return bool((A >= 0).all() and abs(A.sum() / A[..., 0].numel() - 1) <= tol)"),
        True,
    ),
    (
        "lab_distribution",
        "entries_at_most_one",
        distribution("return bool(((A >= 0) & (A <= 1)).all())"),
        True,
    ),
    # Lab 3: weights along a direction, for (b)
    (
        "lab_sharpen",
        "einsum",
        sharpen("S = torch.einsum('b,nd,d->bn', betas, K, u)\nreturn S.softmax(-1)"),
        (),
    ),
    (
        "lab_sharpen",
        "own_attention",
        sharpen("Q = betas[:, None] * u\n_, A = attention(Q[None], K[None], K[None])\nreturn A[0]"),
        (),
    ),
    (
        "lab_sharpen",
        "outer_product",
        sharpen("return torch.softmax(torch.outer(betas, K @ u), dim=1)"),
        (),
    ),
    (
        "lab_sharpen",
        "logsumexp",
        sharpen(
            "S = betas[:, None] * (K @ u)\nreturn torch.exp(S - S.logsumexp(-1, keepdim=True))"
        ),
        (),
    ),
    (
        "lab_sharpen",
        "queries_as_rows",
        sharpen("Q = betas[:, None] * u[None, :]\nreturn (Q @ K.T).softmax(-1)"),
        (),
    ),
    (
        "lab_sharpen",
        "scaled",
        sharpen("return (torch.outer(betas, K @ u) / K.shape[1] ** 0.5).softmax(-1)"),
        True,
    ),
    (
        "lab_sharpen",
        "softmax_over_betas",
        sharpen("return torch.outer(betas, K @ u).softmax(0)"),
        True,
    ),
    (
        "lab_sharpen",
        "loop_over_betas",
        sharpen("return torch.stack([torch.softmax(b * (K @ u), 0) for b in betas])"),
        True,
    ),
    (
        "lab_sharpen",
        "unit_direction",
        sharpen("return torch.outer(betas, K @ (u / u.norm())).softmax(-1)"),
        True,
    ),
    (
        "lab_sharpen",
        "betas_ignored",
        sharpen("return (K @ u).softmax(0).expand(len(betas), -1)"),
        True,
    ),
    ("lab_sharpen", "transposed", sharpen("return torch.outer(K @ u, betas).softmax(0)"), True),
    (
        "lab_sharpen",
        "scores_not_exponentiated",
        sharpen("S = torch.outer(betas, K @ u)\nreturn S / S.sum(-1, keepdim=True)"),
        True,
    ),
    (
        "lab_sharpen",
        "columns_as_keys",
        sharpen("return torch.outer(betas, K.T @ u).softmax(-1)"),
        True,
    ),
    ("lab_sharpen", "sigmoid", sharpen("return torch.sigmoid(torch.outer(betas, K @ u))"), True),
    # Lab 4: distance from an even split, for (c)
    (  # the text asks for the inputs' dtype
        "lab_pair",
        "float32_distance",
        pair(
            "t = torch.zeros_like(A, dtype=torch.float32)\nrows = torch.arange(A.shape[0])\n"
            "t[rows, I] = 0.5\nt[rows, J] = 0.5\nreturn (0.5 * (A.float() - t).abs().sum(-1)).double()"
        ),
        True,
    ),
    (
        "lab_pair",
        "one_hot",
        pair(
            "n = A.shape[1]\n"
            "t = (torch.nn.functional.one_hot(I, n) + torch.nn.functional.one_hot(J, n)) / 2\n"
            "return (A - t).abs().sum(-1) / 2"
        ),
        (),
    ),
    (
        "lab_pair",
        "by_parts",
        pair(
            "b = torch.arange(len(I))\na_i, a_j = A[b, I], A[b, J]\n"
            "rest = A.sum(-1) - a_i - a_j\n"
            "return ((a_i - 0.5).abs() + (a_j - 0.5).abs() + rest) / 2"
        ),
        (),
    ),
    (
        "lab_pair",
        "scatter",
        pair(
            "idx = torch.stack([I, J], 1)\n"
            "t = torch.zeros_like(A).scatter(1, idx, 0.5)\n"
            "return 0.5 * torch.linalg.vector_norm(A - t, ord=1, dim=-1)"
        ),
        (),
    ),
    (
        "lab_pair",
        "where_mask",
        pair(
            "cols = torch.arange(A.shape[1])[None, :]\n"
            "hit = (cols == I[:, None]) | (cols == J[:, None])\n"
            "t = torch.where(hit, 0.5, 0.0).to(A.dtype)\n"
            "return (A - t).abs().sum(dim=1) * 0.5"
        ),
        (),
    ),
    (
        "lab_pair",
        "no_half",
        pair(
            "b = torch.arange(len(I))\nt = torch.zeros_like(A)\nt[b, I] = 0.5\nt[b, J] = 0.5\n"
            "return (A - t).abs().sum(-1)"
        ),
        True,
    ),
    (
        "lab_pair",
        "squared",
        pair(
            "b = torch.arange(len(I))\nt = torch.zeros_like(A)\nt[b, I] = 0.5\nt[b, J] = 0.5\n"
            "return ((A - t) ** 2).sum(-1)"
        ),
        True,
    ),
    (
        "lab_pair",
        "largest_difference",
        pair(
            "b = torch.arange(len(I))\nt = torch.zeros_like(A)\nt[b, I] = 0.5\nt[b, J] = 0.5\n"
            "return (A - t).abs().amax(-1)"
        ),
        True,
    ),
    (
        "lab_pair",
        "all_on_i",
        pair(
            "b = torch.arange(len(I))\nt = torch.zeros_like(A)\nt[b, I] = 1.0\n"
            "return 0.5 * (A - t).abs().sum(-1)"
        ),
        True,
    ),
    (
        "lab_pair",
        "columns_for_every_row",
        pair(
            "t = torch.zeros_like(A)\nt[:, I] = 0.5\nt[:, J] = 0.5\nreturn 0.5 * (A - t).abs().sum(-1)"
        ),
        True,
    ),
    (
        "lab_pair",
        "loop",
        pair(
            "out = []\nfor b in range(len(I)):\n    t = torch.zeros_like(A[b])\n"
            "    t[I[b]] = t[J[b]] = 0.5\n    out.append(0.5 * (A[b] - t).abs().sum())\n"
            "return torch.stack(out)"
        ),
        True,
    ),
    (
        "lab_pair",
        "mean_over_rows",
        pair(
            "b = torch.arange(len(I))\nt = torch.zeros_like(A)\nt[b, I] = 0.5\nt[b, J] = 0.5\n"
            "return 0.5 * (A - t).abs().sum(-1).mean()"
        ),
        True,
    ),
    (
        "lab_pair",
        "weights_on_pair_only",
        pair(
            "b = torch.arange(len(I))\nreturn 0.5 * ((A[b, I] - 0.5).abs() + (A[b, J] - 0.5).abs())"
        ),
        True,
    ),
    # Lab 5: recovery errors, for (d)
    (
        "lab_recovery",
        "bmm",
        recovery(
            "R = torch.bmm(C.unsqueeze(1), M).squeeze(1)\nreturn (R - V).norm(dim=1) / V.norm(dim=1)"
        ),
        (),
    ),
    (
        "lab_recovery",
        "einsum",
        recovery(
            "R = torch.einsum('bi,bij->bj', C, M)\n"
            "return torch.linalg.vector_norm(R - V, dim=-1) / torch.linalg.vector_norm(V, dim=-1)"
        ),
        (),
    ),
    (
        "lab_recovery",
        "broadcast_sum",
        recovery(
            "R = (C[:, :, None] * M).sum(1)\nreturn ((R - V) ** 2).sum(-1).sqrt() / (V**2).sum(-1).sqrt()"
        ),
        (),
    ),
    (
        "lab_recovery",
        "transposed_product",
        recovery("R = (M.mT @ C[..., None])[..., 0]\nreturn (R - V).norm(dim=-1) / V.norm(dim=-1)"),
        (),
    ),
    (
        "lab_recovery",
        "column_convention",
        recovery("R = (M @ C[..., None])[..., 0]\nreturn (R - V).norm(dim=-1) / V.norm(dim=-1)"),
        True,
    ),
    (
        "lab_recovery",
        "absolute_error",
        recovery("R = (C[:, None] @ M)[:, 0]\nreturn (R - V).norm(dim=-1)"),
        True,
    ),
    (
        "lab_recovery",
        "divided_by_recovered",
        recovery("R = (C[:, None] @ M)[:, 0]\nreturn (R - V).norm(dim=-1) / R.norm(dim=-1)"),
        True,
    ),
    (
        "lab_recovery",
        "squared",
        recovery("R = (C[:, None] @ M)[:, 0]\nreturn ((R - V).norm(dim=-1) / V.norm(dim=-1)) ** 2"),
        True,
    ),
    (
        "lab_recovery",
        "unbatched_product",
        recovery("R = C @ M\nreturn (R - V).norm(dim=-1) / V.norm(dim=-1)"),
        True,
    ),
    (
        "lab_recovery",
        "loop",
        recovery("return torch.stack([(c @ m - v).norm() / v.norm() for c, m, v in zip(C, M, V)])"),
        True,
    ),
    (
        "lab_recovery",
        "norm_over_batch",
        recovery("R = (C[:, None] @ M)[:, 0]\nreturn (R - V).norm(dim=0) / V.norm(dim=0)"),
        True,
    ),
    (
        "lab_recovery",
        "one_norm",
        recovery("R = (C[:, None] @ M)[:, 0]\nreturn (R - V).abs().sum(-1) / V.abs().sum(-1)"),
        True,
    ),
    # Lab 6: noisy keys, for (e)
    (
        "lab_noise",
        "view_and_l1",
        noise(
            NOISE_KEYS + NOISE_TARGET + "keys = mu + eps_values.sqrt().view(-1, 1, 1, 1) * z\n"
            "alpha = torch.einsum('enld,ed->enl', keys, queries).softmax(-1)\n"
            "return torch.linalg.vector_norm(alpha - t, ord=1, dim=-1).mean(-1) / 2"
        ),
        (),
    ),
    (
        "lab_noise",
        "tv_by_parts",
        noise(
            NOISE_KEYS
            + "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "rest = alpha.sum(-1) - alpha[..., i] - alpha[..., j]\n"
            "tv = ((alpha[..., i] - 0.5).abs() + (alpha[..., j] - 0.5).abs() + rest) / 2\n"
            "return tv.mean(dim=1)"
        ),
        (),
    ),
    (
        "lab_noise",
        "own_attention",
        noise(
            NOISE_KEYS + NOISE_TARGET + "E = len(eps_values)\n"
            "keys = (mu + eps_values.sqrt()[:, None, None, None] * z).reshape(E * n_samples, n, d)\n"
            "q = queries.repeat_interleave(n_samples, dim=0)[:, None, :]\n"
            "_, A = attention(q, keys, keys)\n"
            "return 0.5 * (A[:, 0] - t).abs().sum(-1).reshape(E, n_samples).mean(1)"
        ),
        (),
    ),
    (
        "lab_noise",
        "float32_draws",
        noise(
            NOISE_KEYS.replace("dtype=mu.dtype", "dtype=torch.float32")
            + NOISE_TARGET
            + "keys = mu + eps_values.sqrt()[:, None, None, None] * z.double()\n"
            + NOISE_WEIGHTS
            + "return 0.5 * (alpha - t).abs().sum(-1).mean(-1)"
        ),
        (),
    ),
    (  # the scores k_l . q drawn directly: mu_l . q + sqrt(eps) |q| g, the same distribution
        "lab_noise",
        "scores_drawn_directly",
        noise(
            "n = mu.shape[0]\n"
            + NOISE_TARGET
            + "g = torch.randn(len(eps_values), n_samples, n, generator=generator, dtype=mu.dtype)\n"
            "spread = (eps_values.sqrt() * queries.norm(dim=-1))[:, None, None]\n"
            "alpha = torch.softmax((queries @ mu.T)[:, None, :] + spread * g, -1)\n"
            "return 0.5 * (alpha - t).abs().sum(-1).mean(-1)"
        ),
        (),
    ),
    (
        "lab_noise",
        "eps_as_std",
        noise(
            NOISE_KEYS
            + NOISE_TARGET
            + "keys = mu + eps_values[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "return 0.5 * (alpha - t).abs().sum(-1).mean(-1)"
        ),
        True,
    ),
    (
        "lab_noise",
        "no_half",
        noise(
            NOISE_KEYS
            + NOISE_TARGET
            + "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "return (alpha - t).abs().sum(-1).mean(-1)"
        ),
        True,
    ),
    (
        "lab_noise",
        "loop_over_eps",
        noise(
            NOISE_TARGET.replace("n, ", "mu.shape[0], ") + "out = []\n"
            "for eps, q in zip(eps_values, queries):\n"
            "    keys = mu + eps.sqrt() * torch.randn(n_samples, *mu.shape, generator=generator, dtype=mu.dtype)\n"
            "    alpha = torch.softmax(keys @ q, -1)\n"
            "    out.append(0.5 * (alpha - t).abs().sum(-1).mean())\nreturn torch.stack(out)"
        ),
        True,
    ),
    (
        "lab_noise",
        "mean_over_eps_axis",
        noise(
            NOISE_KEYS
            + NOISE_TARGET
            + "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "return 0.5 * (alpha - t).abs().sum(-1).mean(0)"
        ),
        True,
    ),
    (
        "lab_noise",
        "first_query_for_all",
        noise(
            NOISE_KEYS + NOISE_TARGET + "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            "alpha = torch.softmax(keys @ queries[0], -1)\n"
            "return 0.5 * (alpha - t).abs().sum(-1).mean(-1)"
        ),
        True,
    ),
    (
        "lab_noise",
        "no_noise",
        noise(
            NOISE_TARGET.replace("n, ", "mu.shape[0], ")
            + "alpha = torch.softmax(queries @ mu.T, -1)\n"
            "return 0.5 * (alpha - t).abs().sum(-1)"
        ),
        True,
    ),
    (
        "lab_noise",
        "squared_distance",
        noise(
            NOISE_KEYS
            + NOISE_TARGET
            + "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "return ((alpha - t) ** 2).sum(-1).mean(-1)"
        ),
        True,
    ),
    (
        "lab_noise",
        "noise_shared_by_keys",
        noise(
            NOISE_TARGET.replace("n, ", "mu.shape[0], ")
            + "z = torch.randn(len(eps_values), n_samples, 1, mu.shape[1], generator=generator, dtype=mu.dtype)\n"
            "keys = mu + eps_values.sqrt()[:, None, None, None] * z\n"
            + NOISE_WEIGHTS
            + "return 0.5 * (alpha - t).abs().sum(-1).mean(-1)"
        ),
        True,
    ),
]

CASES = cases_table(GROUPS, ROWS)

MESSAGES = {
    "lab_attention:float32_softmax": ("lab_attention", "a step was in float32"),
    "lab_pair:float32_distance": ("lab_pair_distance", "a step was in float32"),
    "d:float32_matrix": ("d_recovery_matrix", "float32"),
}

# Wrong cases no visible check of their part catches (tests/grading/test_visible_checks.py), and why:
# each breaks a rule of the lab's text (no loops, no fused attention) with right values; the
# judge proves the rules on the source, which is the visible rule checks' job (issue 30, item 2).
VISIBLE_EXCEPTIONS = {}

# Visible checks name the likely cause on evidence: case id -> (visible test cell, words).
VISIBLE_MESSAGES = {
    "d:column_convention_only": ("d_recovery_matrix", "the column-vector convention"),
    "d:float32_matrix": ("d_recovery_matrix", "a step in float32"),
    "f:missing_half": ("f_sample_keys", "the 1/2 of mu_x mu_x^T / 2 is missing"),
    "f:half_on_the_std": ("f_sample_keys", "1/2 on the standard deviation"),
    "f:eps_as_std": ("f_sample_keys", "eps is the variance"),
    "f:softmax_over_draws": ("f_simulation_statistics", "the softmax runs over the draws"),
    "lab_attention:scaled": ("lab_attention", "scaled by 1/sqrt(d)"),
    "lab_attention:float32_softmax": ("lab_attention", "a step in float32"),
    "lab_attention:naive_exp_overflows": ("lab_attention", "subtract each row's maximum"),
    "lab_recovery:column_convention": ("lab_recovery_errors", "the column-vector convention"),
    "lab_noise:first_query_for_all": ("lab_noise_sweep", "one query for every eps"),
}
