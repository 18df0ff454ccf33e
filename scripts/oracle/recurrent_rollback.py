"""Rollback points for mlx-lm's ArraysCache, so speculative_generate_step can run hybrid models.

mlx-lm's speculative_generate_step refuses a cache that cannot be trimmed, and a gated delta net
layer's ArraysCache (conv state, recurrence state) cannot. install() makes it trimmable without
touching the model's arithmetic:

- The hybrid families' module-level ArraysCache (qwen3_5.py, qwen3_next.py; qwen3_5_moe builds its
  text model from qwen3_5) is replaced by RollbackArraysCache, so model.make_cache() returns it.
- Around each gated delta net layer's __call__ (qwen3_5.GatedDeltaNet,
  qwen3_next.Qwen3NextGatedDeltaNet), the layer's cache is made the "recording" one; while it is,
  the layer's own conv1d call hands over the convolution's whole input (conv state, then the
  positions), and mlx-lm's own compiled _gated_delta_step_ops (gated_delta.py, the CPU path of
  gated_delta_update: one call per position) hands over the state it was given and the state it
  returns. The wrappers only keep references to arrays the forward computes; they add no op.
- RollbackArraysCache.trim(n) forgets the last n positions recorded since the previous trim: the
  conv state becomes the kernel-1 conv inputs ending at the last kept position (a slice of the
  recorded input, then mx.contiguous as the layer stores it) and the recurrence state the state
  the forward computed after that position. Every trim, of 0 positions too, starts a new
  recording; speculative_generate_step trims the target's and the draft's caches once per round.

Positions outside any recording (before install, or with a cache of another kind) are not
recorded; a trim of more positions than recorded raises.
"""

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models import gated_delta, qwen3_5, qwen3_next
from mlx_lm.models.cache import ArraysCache

_recording = None  # the RollbackArraysCache of the gated delta net layer being run, or None
_installed = False


class RollbackArraysCache(ArraysCache):
    """mlx-lm's ArraysCache that records its layer's positions and can be trimmed within them."""

    def __init__(self, size, left_padding=None):
        super().__init__(size, left_padding)
        self.spans = []  # per recorded forward: {"conv_input": array, "states": [before, after 0, ...]}

    def is_trimmable(self):
        return True

    def begin_span(self):
        self.spans.append({"conv_input": None, "states": []})

    def trim(self, n):
        recorded = sum(len(s["states"]) - 1 for s in self.spans)
        if n > recorded:
            raise ValueError(f"cannot roll back {n} positions, {recorded} were recorded")
        if n > 0:
            at = recorded - n
            for span in self.spans:
                positions = len(span["states"]) - 1
                if at <= positions:
                    break
                at -= positions
            conv_input = span["conv_input"]
            n_keep = conv_input.shape[1] - (len(span["states"]) - 1)
            self[0] = mx.contiguous(conv_input[:, at:at + n_keep, :])
            self[1] = span["states"][at]
        self.spans = []
        return n


def _recording_layer(call):
    def wrapped(self, inputs, mask=None, cache=None):
        global _recording
        if not isinstance(cache, RollbackArraysCache):
            return call(self, inputs, mask, cache)
        cache.begin_span()
        _recording = cache
        try:
            return call(self, inputs, mask, cache)
        finally:
            _recording = None

    return wrapped


def _recording_conv(call):
    def wrapped(self, x):
        if _recording is not None:
            _recording.spans[-1]["conv_input"] = x
        return call(self, x)

    return wrapped


def _recording_step(step):
    def wrapped(q, k, v, g, beta, state, mask=None):
        y, new_state = step(q, k, v, g, beta, state, mask)
        if _recording is not None:
            states = _recording.spans[-1]["states"]
            if not states:
                states.append(state)
            states.append(new_state)
        return y, new_state

    return wrapped


def install():
    """Makes the hybrid families' caches RollbackArraysCache and records their layers' positions (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    for module in (qwen3_5, qwen3_next):
        module.ArraysCache = RollbackArraysCache
    qwen3_5.GatedDeltaNet.__call__ = _recording_layer(qwen3_5.GatedDeltaNet.__call__)
    qwen3_next.Qwen3NextGatedDeltaNet.__call__ = _recording_layer(qwen3_next.Qwen3NextGatedDeltaNet.__call__)
    nn.Conv1d.__call__ = _recording_conv(nn.Conv1d.__call__)
    gated_delta._gated_delta_step_ops = _recording_step(gated_delta._gated_delta_step_ops)
