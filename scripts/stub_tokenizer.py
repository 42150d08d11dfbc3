#!/usr/bin/env python3
"""Writes a small word-level Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) into
a folder, for benchmarking the OpenAI stub server offline: AIPerf needs a tokenizer to build and
count prompts, and the real model's tokenizer would have to be downloaded. Its vocabulary is the
words and punctuation of AIPerf's own prompt corpus, so AIPerf's prompts encode and decode back
to the same token count. Needs the `tokenizers` package (installed with aiperf).

Usage: stub_tokenizer.py OUTDIR [CORPUS]   (CORPUS: default, AIPerf's shakespeare.txt)
       stub_tokenizer.py --hf-home HF_HOME [CORPUS]
The second form writes it into a Hugging Face cache as the model `dynosim/stub-tokenizer`: with
HF_HOME=HF_HOME and HF_HUB_OFFLINE=1, AIPerf loads it by that name in every one of its processes
(AIPerf 0.13's worker processes load tokenizers through the cache, not from a folder path).
"""
import json
import os
import sys
from pathlib import Path


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == "--hf-home":
        if len(args) < 2:
            sys.exit(__doc__)
        repo = Path(args[1]) / "hub" / "models--dynosim--stub-tokenizer"
        rev = "0" * 40
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(rev)
        out = repo / "snapshots" / rev
        args = args[2:]
    else:
        out = Path(args[0])
        args = args[1:]
    if args:
        corpus = Path(args[0])
    else:
        import aiperf.dataset.generator as g
        corpus = Path(g.__file__).parent / "assets" / "shakespeare.txt"
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]"], min_frequency=1)
    tok.train([str(corpus)], trainer)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
           "model_max_length": 1000000, "clean_up_tokenization_spaces": False}
    (out / "tokenizer_config.json").write_text(json.dumps(cfg))
    print(out)


if __name__ == "__main__":
    main()
