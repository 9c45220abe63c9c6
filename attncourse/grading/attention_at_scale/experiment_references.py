"""References of Part 6 (what the cache costs in quality) and the named mistakes beside them.

The recall data has no single right batch (it is random), so its checks are properties; what
has one right answer is here: the elements cached per token per layer of each attention layer,
the loss of one batch, and where a layer's outputs read later tokens.
"""

import torch

F64 = torch.float64
IGNORE = -100  # the target of a position that is not a query


def cache_expected(kind, H, G, d_h, r, d_R):
    """Elements cached per token per layer: a key and a value per key/value head (MHA: G = H,
    MQA: G = 1); MLA the latent and the one rotary key all heads share."""
    return r + d_R if kind == "mla" else 2 * G * d_h


def cache_mistakes(kind, H, G, d_h, r, d_R):
    """{wrong count: the named mistake that gives it} (the first name of a count is kept)."""
    if kind == "mla":
        table = {
            r: "the rotary key forgotten: MLA caches the latent c_s and the rotary key k^R_s",
            r + H * d_R: "one rotary key per head: all heads share one k^R_s",
            2 * r + d_R: "the latent counted twice (for K and for V): one c_s serves both",
            2 * (r + d_R): "K and V counted separately: c_s and k^R_s are cached once",
            2 * H * d_h: "the up-projected keys and values counted: they are rebuilt, not cached",
        }
    else:
        table = {
            G * d_h: "K and V counted once: every key/value head caches a key and a value",
            2 * H * d_h: "heads instead of key/value heads: only the G key/value heads are cached",
            H * d_h: "heads instead of key/value heads, and K and V counted once",
            2 * (H // G) * d_h: "H/G heads: the G key/value heads are cached, H/G query heads "
            "share each",
        }
    expected = cache_expected(kind, H, G, d_h, r, d_R)
    return {count: name for count, name in reversed(table.items()) if count != expected}


def answered_loss(logits, targets, shift=0):
    """Mean cross-entropy (float64) over the positions whose target is not IGNORE; ``shift=1``
    is the named mistake of next-token training (position t scored against target t + 1)."""
    logits = logits.to(F64)
    if shift:
        logits, targets = logits[:, :-shift], targets[:, shift:]
    keep = targets != IGNORE
    return float(torch.nn.functional.cross_entropy(logits[keep], targets[keep].long()))


def loss_mistakes(logits, targets, after):
    """{description: the loss a named mistake returns} beside the right one."""
    keep = targets != IGNORE
    picked = torch.log_softmax(logits.to(F64)[keep], -1)
    per = -picked.gather(1, targets[keep].long()[:, None])
    return {
        "the loss after the step: return the loss the step was computed from": after,
        "targets shifted as for next-token prediction: the answer is scored at the query's own "
        "position": answered_loss(logits, targets, shift=1),
        "the loss summed, not averaged over the answered positions": float(per.sum()),
    }


def leak_cause(leaks):
    """The named mistake of a set of (t, s) pairs where output t moved when only token s > t did."""
    if all(s == t + 1 for t, s in leaks):
        return "the mask is off by one: position t also reads token t + 1 (triu(diagonal=2))"
    if any(t == 0 for t, _ in leaks) and any(s - t > 1 for t, s in leaks):
        return "no causal mask (or one that lets a position read later tokens)"
    return "position t reads tokens after it: mask every score of s > t before the softmax"
