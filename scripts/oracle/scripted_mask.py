"""A scripted token constraint as an mlx-lm logits processor, the oracle twin of the Java tests'
ScriptedConstraint (exec-stage tests): the same rule on both sides, so a masked run is compared
bit for bit with mlx-lm given the same mask.

Spec (JSON object): {"modulus": M, "offset": O, "eos": [ids], "dry_at": D, "complete_at": C}
  At generated step s (0-based: the step that samples the s-th token) the allowed ids are those
  with (id + O) % M == s % M, plus every id in "eos". From step C on (absent or -1: never) only
  the "eos" ids are allowed (a complete constraint: the row ends on its stop token). At step
  s == D (absent or -1: never) no id is allowed: the constraint can no longer be satisfied and
  the row must end with an error at that step, without a token.

The processor is appended after mlx-lm's own (make_logits_processors) and applies
    logits = mx.where(mask, logits, -inf)
with mask a bool array over the vocabulary (llguidance's own mlx helper does the same selection
with a Metal kernel). It counts its calls to know the step: generate_step and
BatchGenerator's GenerationBatch call a row's processors once per step, in order. From step D on
it returns the logits unmasked (mlx-ring builds a step whose mask is empty without the mask, and
that step's token is never used) and records dry_step = D.
"""

import mlx.core as mx
import numpy as np


def apply_mask(logits, allowed):
    """The masking op of every oracle constraint: the logits where `allowed` (a numpy bool vector
    over the vocabulary) is set, -inf elsewhere."""
    return mx.where(mx.array(allowed), logits, -float("inf"))


class ScriptedMask:
    def __init__(self, spec):
        self.modulus = int(spec["modulus"])
        self.offset = int(spec.get("offset", 0))
        self.eos = [int(t) for t in spec.get("eos", [])]
        self.dry_at = int(spec.get("dry_at", -1))
        self.complete_at = int(spec.get("complete_at", -1))
        self.step = 0
        self.dry_step = None

    def allowed(self, step, vocab):
        ids = np.arange(vocab)
        mask = (ids + self.offset) % self.modulus == step % self.modulus
        if 0 <= self.complete_at <= step:
            mask[:] = False
        for t in self.eos:
            if 0 <= t < vocab:
                mask[t] = True
        return mask

    def __call__(self, tokens, logits):
        s = self.step
        self.step += 1
        if self.dry_step is not None or s == self.dry_at:
            if self.dry_step is None:
                self.dry_step = s
            return logits
        return apply_mask(logits, self.allowed(s, logits.shape[-1]))

    def failed_at(self, index):
        """Whether the index-th generated token comes from a step that had no allowed id."""
        return self.dry_step is not None and index >= self.dry_step
