#!/usr/bin/env python3
"""gen_model_adamw_steps.py — a few fp32 AdamW training steps of the tiny models, from PyTorch.

What: for each tiny model golden of gen_model_goldens.py (Llama with GQA, Qwen2 with q/k/v
biases and a tied head, GPT-2), starts from that golden's initial parameters and runs K = 5
steps of torch.optim.AdamW(lr 1e-3, betas (0.9, 0.999), eps 1e-8, foreach=False) in fp32,
one batch per step. Weight decay 0.01 on the "decay" group, 0 on "no_decay", split by the rule
of framework/optim/param_groups.cpp (default_group_of): no decay for rank < 2 or names that
contain "norm" or end in "bias". Batch 0 is the model golden's own batch (so the first loss
must match that golden's loss: the check that both files start from the same weights);
batches 1..4 are new random tokens with a few ignored (-100) targets.
Writes tests/data/models/<name>_adamw_steps.fgld; read by tests/models/test_model_adamw_steps.cpp.
Relies on: tests/data/models/<name>.fgld (config and initial parameters; regenerate those
first if they change).

Regenerate (CPU PyTorch is enough; one thread makes the bytes reproducible, since torch's CPU
reductions depend on the thread count):
    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install transformers
    OMP_NUM_THREADS=1 python3 tools/goldens/gen_model_adamw_steps.py

File format: .fgld as documented in gen_model_goldens.py. Tensors:
    "input_ids", "targets"   i32 (K, B, T): the batch of each step (targets already shifted)
    "losses"                 f32 (K): the training loss of step k, computed before its update
    "grad_norms"             f32 (K): the global L2 gradient norm of step k (no clipping)
    "final_logits"           f32 (B, T, V): logits of batch 0 after the K updates
    "final_param/<name>"     f32: every parameter after the K updates
    "final_logits_fp32_spread", "final_param_fp32_spread/<name>"   f32 (1): max |fp32 - fp64|
                             over the tensor, between this fp32 run and the same steps in fp64
The spreads measure how well fp32 determines each result. Adam divides by sqrt(v) + eps, so
an element whose gradient is at the level of rounding noise (e.g. GPT-2's key bias, whose
gradient is zero in exact arithmetic: softmax ignores a shift shared by every key) still moves
by up to lr per step, in a direction that rounding picks; the C++ test allows a few spreads
on top of its fp32 tolerance.
"""
import json
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F
import transformers

from gen_model_goldens import write_fgld  # the FGLD writer the model goldens use

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "models")
CASES = [("llama_gqa_tiny", 11), ("qwen2_tiny", 12), ("gpt2_tiny", 13)]  # (golden, seed of batches 1..K-1)
STEPS = 5
LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01
MODEL_CLASSES = {"llama": transformers.LlamaForCausalLM, "qwen2": transformers.Qwen2ForCausalLM,
                 "gpt2": transformers.GPT2LMHeadModel}
CONFIG_CLASSES = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
                  "gpt2": transformers.GPT2Config}


def read_fgld(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"FGLD0001", path
    pos = 8
    (count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    out = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + name_len].decode()
        pos += name_len
        code, rank = struct.unpack_from("<II", data, pos)
        pos += 8
        dims = struct.unpack_from("<%dq" % rank, data, pos)
        pos += 8 * rank
        dtype = {0: np.float32, 1: np.int32, 2: np.uint8}[code]
        n = int(np.prod(dims)) if rank else 1
        out[name] = np.frombuffer(data, dtype=dtype, count=n, offset=pos).reshape(dims).copy()
        pos += n * np.dtype(dtype).itemsize
    return out


def is_no_decay(name, param):
    # framework/optim/param_groups.cpp, default_group_of.
    return param.ndim < 2 or "norm" in name or name.endswith("bias")


def make_batches(golden, vocab, seed):
    ids0 = golden["input_ids"].astype(np.int64)
    targets0 = golden["targets"].astype(np.int64)
    batch, seq = ids0.shape
    gen = torch.Generator().manual_seed(seed)
    ids, targets = [ids0], [targets0]
    for k in range(1, STEPS):
        x = torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
        y = torch.full((batch, seq), -100, dtype=torch.int64)
        y[:, :-1] = x[:, 1:]
        # A different ignored target per step (beyond each row's last position).
        y[k % batch, (3 * k) % (seq - 1)] = -100
        ids.append(x.numpy())
        targets.append(y.numpy())
    return np.stack(ids), np.stack(targets)


def train(golden, batch_seed, dtype):
    """K AdamW steps from the golden's weights, in dtype; returns what the golden file records."""
    config_dict = json.loads(golden["config_json"].tobytes().decode())
    family = config_dict["model_type"]
    config = CONFIG_CLASSES[family].from_dict(config_dict)
    config._attn_implementation = "eager"
    model = MODEL_CLASSES[family](config).to(dtype)
    model.eval()  # no dropout (the configs have none anyway)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            p.copy_(torch.from_numpy(golden["param/" + pname]).to(dtype))
    vocab = config.vocab_size

    ids, targets = make_batches(golden, vocab, batch_seed)
    decay = [p for n, p in model.named_parameters() if not is_no_decay(n, p)]
    no_decay = [p for n, p in model.named_parameters() if is_no_decay(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS, foreach=False)
    losses, grad_norms = [], []
    for k in range(STEPS):
        opt.zero_grad(set_to_none=False)
        logits = model(input_ids=torch.from_numpy(ids[k])).logits
        loss = F.cross_entropy(logits.reshape(-1, vocab), torch.from_numpy(targets[k]).reshape(-1),
                               ignore_index=-100)
        loss.backward()
        losses.append(loss.item())
        grad_norms.append(float(np.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()))))
        opt.step()
    with torch.no_grad():
        final_logits = model(input_ids=torch.from_numpy(ids[0])).logits.double().numpy()
    final_params = {n: p.detach().double().numpy() for n, p in model.named_parameters()}
    return ids, targets, losses, grad_norms, final_logits, final_params


def run_case(name, batch_seed):
    golden = read_fgld(os.path.join(DATA_DIR, name + ".fgld"))
    ids, targets, losses, grad_norms, logits, params = train(golden, batch_seed, torch.float32)
    # NOTE: equal to within fp32 rounding, not bitwise: torch's CPU reductions may change
    # with the thread count between the two scripts' runs.
    assert abs(losses[0] - float(golden["loss"][0])) <= 1e-6 * abs(losses[0]), (
        f"{name}: first loss {losses[0]} != the model golden's {golden['loss'][0]}: not the same weights or batch")
    # The same steps in fp64: how far fp32 PyTorch itself lands from the exact trajectory.
    _, _, _, _, logits64, params64 = train(golden, batch_seed, torch.float64)
    tensors = [
        ("input_ids", ids.astype(np.int32)),
        ("targets", targets.astype(np.int32)),
        ("losses", np.array(losses, dtype=np.float32)),
        ("grad_norms", np.array(grad_norms, dtype=np.float32)),
        ("final_logits", logits.astype(np.float32)),
        ("final_logits_fp32_spread", np.array([np.abs(logits - logits64).max()], dtype=np.float32)),
    ]
    for pname, p in params.items():
        tensors.append(("final_param/" + pname, p.astype(np.float32)))
        spread = np.abs(p - params64[pname]).max()
        tensors.append(("final_param_fp32_spread/" + pname, np.array([spread], dtype=np.float32)))
    path = os.path.join(DATA_DIR, name + "_adamw_steps.fgld")
    write_fgld(path, tensors)
    print(f"{path}: losses {' '.join(f'{l:.6f}' for l in losses)}, {os.path.getsize(path)} bytes")


def main():
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(True)
    for name, seed in CASES:
        run_case(name, seed)


if __name__ == "__main__":
    main()
