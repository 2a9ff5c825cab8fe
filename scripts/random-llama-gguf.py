#!/usr/bin/env python3
"""Writes a small Llama model with random weights as GGUF (PyPI's `gguf`).

    random-llama-gguf.py OUT.gguf [--embd 512] [--layers 4] [--heads 8]
                         [--kv-heads 4] [--ff 1376] [--vocab 4096] [--ctx 2048]

No tokenizer (tokenizer.ggml.model "none"): a program feeds token ids. The
weights come from a fixed seed, so the same arguments write the same file.
"""
import argparse

import gguf
import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--embd", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=1376)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--ctx", type=int, default=2048)
    a = p.parse_args()
    if a.embd % a.heads or a.heads % a.kv_heads:
        p.error("--embd must be a multiple of --heads, --heads of --kv-heads")
    rng = np.random.default_rng(20261205)
    head_dim = a.embd // a.heads

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("nnmem random llama")
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(a.vocab)
    w.add_tokenizer_model("none")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    def mat(rows: int, cols: int) -> np.ndarray:
        # numpy shape (rows, cols) is ggml's ne = [cols, rows].
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(a.vocab, a.embd))
    for i in range(a.layers):
        kv = head_dim * a.kv_heads
        w.add_tensor(f"blk.{i}.attn_norm.weight", norm(a.embd))
        w.add_tensor(f"blk.{i}.attn_q.weight", mat(a.embd, a.embd))
        w.add_tensor(f"blk.{i}.attn_k.weight", mat(kv, a.embd))
        w.add_tensor(f"blk.{i}.attn_v.weight", mat(kv, a.embd))
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(a.embd, a.embd))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", norm(a.embd))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(a.ff, a.embd))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(a.ff, a.embd))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(a.embd, a.ff))
    w.add_tensor("output_norm.weight", norm(a.embd))
    w.add_tensor("output.weight", mat(a.vocab, a.embd))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
