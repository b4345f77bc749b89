"""The logits and loss tensors of one causal-LM step, per logit, on a tiny Llama (vocab 256)."""

from __future__ import annotations

from estimator import Workload
from estimator.memory import method_models
from estimator.memory.activations import loss_bytes
from tests.estimator.archbuilder import llama_like

ARCH = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)
LOGITS = 256 * 32  # vocabulary x tokens (batch 2 x 16)


def test_padded_labels_hold_ten_bytes_per_logit_when_the_forward_ends() -> None:
    # bf16 logits (the model output) 2 + their fp32 upcast 4 + the fp32 log-softmax 4;
    # backward: log-softmax 4 + NLL gradient 4 + log-softmax gradient 4.
    assert loss_bytes(ARCH, 32) == (12 * LOGITS, 10 * LOGITS)


def test_a_shifted_fp32_copy_adds_four_bytes_while_the_loss_runs() -> None:
    # logits[..., :-1, :].contiguous() of the fp32 upcast: 14 B per logit at the end of
    # forward; not saved for backward, so the start of backward keeps 12.
    assert loss_bytes(ARCH, 32, shift_copy=True) == (12 * LOGITS, 14 * LOGITS)
    # A chunked or fused loss never makes the whole-batch copy.
    assert loss_bytes(ARCH, 32, chunks=0, shift_copy=True) == loss_bytes(ARCH, 32, chunks=0)
    assert loss_bytes(ARCH, 32, chunks=8, shift_copy=True) == loss_bytes(ARCH, 32, chunks=8)


def test_the_shift_copy_reaches_the_end_of_forward_phase() -> None:
    def activations(**extra: object) -> int:
        w = Workload(method="lora", batch=2, seq_len=16, **extra)  # type: ignore[arg-type]
        model = method_models(ARCH, w, has_bf16=True)["lora"]
        phase = next(p for p in model.phases if p.name == "end of forward")
        return phase.breakdown(2)["activations"]

    assert activations(loss_shift_copy=True) - activations() == 4 * LOGITS


def test_a_loss_without_upcast_stays_16_bit_unless_autocast_promotes_it() -> None:
    # GPTBigCode's own loss: CrossEntropyLoss on lm_logits[..., :-1, :].contiguous().
    # Forward end: logits 2 + log-softmax 2 (+2 for the shifted copy); backward start:
    # log-softmax, NLL gradient, log-softmax gradient and the logits, 2 B each.
    assert loss_bytes(ARCH, 32, sixteen_bit=True) == (8 * LOGITS, 4 * LOGITS)
    assert loss_bytes(ARCH, 32, shift_copy=True, sixteen_bit=True) == (8 * LOGITS, 6 * LOGITS)

    def start_of_backward(**extra: object) -> int:
        w = Workload(method="full", batch=2, seq_len=16, **extra)  # type: ignore[arg-type]
        model = method_models(ARCH, w, has_bf16=True)["full"]
        phase = next(p for p in model.phases if p.name.startswith("start of backward"))
        return phase.breakdown(2)["activations"]

    pure = start_of_backward(pure_16bit=True) - start_of_backward(
        pure_16bit=True, loss_upcast=False
    )
    assert pure == 4 * LOGITS
    # Under autocast cross-entropy runs in fp32 whatever the model's code asks.
    assert start_of_backward(loss_upcast=False) == start_of_backward()
