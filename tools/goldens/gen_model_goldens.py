#!/usr/bin/env python3
"""gen_model_goldens.py — fp32 goldens for the model tests, from PyTorch + transformers.

For tiny configs of each family (Llama with GQA, untied head and llama3 RoPE scaling;
Qwen2 with q/k/v biases and a tied head; GPT-2; Qwen3 with q/k norms, GQA and a head_dim
other than hidden / heads; Gemma 3 with sliding and global layers, a window shorter than the
sequence, query_pre_attn_scalar other than head_dim and linear RoPE scaling on the global layer), writes the initial parameters, the inputs, the logits, the mean
loss over non-ignored targets (-100) and every parameter's gradient, under Hugging Face names,
to tests/data/models/<name>.fgld.

Qwen3 and Gemma 3 are computed in fp64 (fp32 parameters widened exactly, so farthing reads the same
weights) and stored as fp32, and carries a greedy continuation: "generate_prompt" (i32) and
"generate_ids" (i32, the 32 tokens transformers' generate picks after it, fp64), with
"generate_margin" (f32: the smallest gap between the top two logits over those steps, so a
reader knows how far its logits may stray before an argmax could flip).

Regenerate (CPU PyTorch is enough; NAMES: only those cases, else all):
    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install transformers
    python3 tools/goldens/gen_model_goldens.py [NAMES...]

File format (.fgld, little-endian), read by tests/models/model_golden.h:
    magic  b"FGLD0001"
    u32    tensor count
    per tensor: u32 name length, name (utf-8), u32 dtype (0 f32, 1 i32, 2 u8),
                u32 rank, i64 dims[rank], raw data (row-major)
Tensors: "config_json" (u8: the Hugging Face config.json text), "input_ids" and "targets"
(i32, (B, T); targets are already shifted: targets[t] = input_ids[t + 1], -100 = ignored),
"logits" (B, T, V), "loss" (1), "param/<name>" and "grad/<name>" for every parameter.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
import transformers

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "models")


def write_fgld(path, tensors):
    with open(path, "wb") as f:
        f.write(b"FGLD0001")
        f.write(struct.pack("<I", len(tensors)))
        for name, arr in tensors:
            arr = np.ascontiguousarray(arr)
            code = {np.dtype(np.float32): 0, np.dtype(np.int32): 1, np.dtype(np.uint8): 2}[arr.dtype]
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<II", code, arr.ndim))
            f.write(struct.pack("<%dq" % arr.ndim, *arr.shape))
            f.write(arr.tobytes())


def make_case(name, model, config, batch, seq, seed, f64=False, generate=0, norm_plus_one=False,
              greedy_by_forward=False):
    torch.manual_seed(seed)
    model.eval()  # no dropout
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname or ".ln_" in pname:
                if pname.endswith("weight"):  # a gain near 1 (Gemma 3's is 1 + w: w near 0)
                    p.copy_((0.0 if norm_plus_one else 1.0) + 0.1 * torch.randn_like(p))
                else:
                    p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    if f64:  # the fp32 values just drawn, widened exactly
        model.double()
    vocab = config.vocab_size
    ids = torch.randint(0, vocab, (batch, seq), dtype=torch.int64)
    targets = torch.full((batch, seq), -100, dtype=torch.int64)
    targets[:, :-1] = ids[:, 1:]
    targets[0, 3] = -100  # a masked target in the middle
    targets[1, 0] = -100
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits = model(input_ids=ids).logits
    if not f64:
        logits = logits.float()
    loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), ignore_index=-100)
    loss.backward()
    extra = []
    if generate:
        prompt = ids[:1, :5]
        with torch.no_grad():
            if greedy_by_forward:  # each token the argmax of the model's forward over all before it
                seq_ids, step_logits = prompt, []
                for _ in range(generate):
                    step_logits.append(model(seq_ids).logits[:, -1])
                    seq_ids = torch.cat([seq_ids, step_logits[-1].argmax(-1, keepdim=True)], 1)
                out = transformers.utils.ModelOutput(sequences=seq_ids, logits=tuple(step_logits))
            else:
                out = model.generate(prompt, max_new_tokens=generate, do_sample=False, min_new_tokens=generate,
                                     output_logits=True, return_dict_in_generate=True, pad_token_id=0,
                                     eos_token_id=None)
        margin = min(float((l[0].topk(2).values[0] - l[0].topk(2).values[1]).item()) for l in out.logits)
        extra = [("generate_prompt", prompt[0].numpy().astype(np.int32)),
                 ("generate_ids", out.sequences[0, prompt.shape[1]:].numpy().astype(np.int32)),
                 ("generate_margin", np.array([margin], dtype=np.float32))]
        print(f"{name}: greedy {generate} tokens, smallest top-2 logit gap {margin:.3g}")
    tensors = [
        ("config_json", np.frombuffer(config.to_json_string().encode(), dtype=np.uint8)),
        ("input_ids", ids.numpy().astype(np.int32)),
        ("targets", targets.numpy().astype(np.int32)),
        ("logits", logits.detach().numpy().astype(np.float32)),
        ("loss", np.array([loss.item()], dtype=np.float32)),
    ] + extra
    for n, p in model.named_parameters():
        tensors.append(("param/" + n, params[n].numpy().astype(np.float32)))
        tensors.append(("grad/" + n, p.grad.numpy().astype(np.float32)))
    path = os.path.join(OUT_DIR, name + ".fgld")
    write_fgld(path, tensors)
    print(f"{path}: loss {loss.item():.6f}, {len(params)} parameters, {os.path.getsize(path)} bytes")


def main():
    torch.set_default_dtype(torch.float32)
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    cases = {"llama_gqa_tiny": llama_case, "qwen2_tiny": qwen2_case, "gpt2_tiny": gpt2_case,
             "qwen3_tiny": qwen3_case, "gemma3_tiny": gemma3_case, "qwen3_window_tiny": qwen3_window_case}
    for name, case in cases.items():
        if not only or name in only:
            case()


def llama_case():
    llama_cfg = transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=44, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
        attn_implementation="eager")
    make_case("llama_gqa_tiny", transformers.LlamaForCausalLM(llama_cfg), llama_cfg, 2, 12, 1)


def qwen2_case():
    qwen_cfg = transformers.Qwen2Config(
        vocab_size=96, hidden_size=48, intermediate_size=40, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
        attn_implementation="eager")
    make_case("qwen2_tiny", transformers.Qwen2ForCausalLM(qwen_cfg), qwen_cfg, 2, 12, 2)


def gpt2_case():
    gpt2_cfg = transformers.GPT2Config(
        vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5,
        activation_function="gelu_new", bos_token_id=0, eos_token_id=0,
        attn_implementation="eager")
    make_case("gpt2_tiny", transformers.GPT2LMHeadModel(gpt2_cfg), gpt2_cfg, 2, 12, 3)


def qwen3_case():
    # head_dim 16 with hidden 32 and 4 heads: q is 64 wide, so o_proj is (32, 64).
    qwen3_cfg = transformers.Qwen3Config(
        vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
        attn_implementation="eager")
    make_case("qwen3_tiny", transformers.Qwen3ForCausalLM(qwen3_cfg), qwen3_cfg, 2, 12, 4, f64=True, generate=32)


def qwen3_window_case():
    # Qwen3 with use_sliding_window: layers from max_window_layers (1) on attend through a window of
    # 4 over 12 tokens (and the 37 of the greedy continuation), with the same RoPE as layer 0.
    # The greedy continuation is the argmax of the model's forward, step by step: transformers
    # 5.25's generate (with or without its cache) departs from that for Qwen3's sliding layers at
    # the 9th token here (generate picks 47; the forward over the same 13 tokens, or any longer
    # prefix, gives 72 at that position), so generate is not the model's greedy decoding there.
    qwen3_cfg = transformers.Qwen3Config(
        vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
        use_sliding_window=True, sliding_window=4, max_window_layers=1, attn_implementation="eager")
    make_case("qwen3_window_tiny", transformers.Qwen3ForCausalLM(qwen3_cfg), qwen3_cfg, 2, 12, 6, f64=True,
              generate=32, greedy_by_forward=True)


def gemma3_case():
    # Both layer kinds (sliding, full, sliding) with a window of 5 over 12 tokens (and the 37 of the
    # greedy continuation); head_dim 16 with hidden 32 and 4 heads; scores scaled by
    # query_pre_attn_scalar 24, not head_dim; the global layer's RoPE with linear scaling (as
    # Gemma 3 4B's). No padding_idx (pad_token_id None): farthing trains every embedding row.
    gemma3_cfg = transformers.Gemma3TextConfig(
        vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
        rms_norm_eps=1e-6, query_pre_attn_scalar=24, sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        tie_word_embeddings=True, pad_token_id=None, attn_implementation="eager")
    make_case("gemma3_tiny", transformers.Gemma3ForCausalLM(gemma3_cfg), gemma3_cfg, 2, 12, 5, f64=True,
              generate=32, norm_plus_one=True)


if __name__ == "__main__":
    main()
