#!/usr/bin/env python3
"""Writes a small word-level Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) into
a folder, for benchmarking the OpenAI stub server offline: AIPerf needs a tokenizer to build and
count prompts, and the real model's tokenizer would have to be downloaded. Its vocabulary is the
words and punctuation of AIPerf's own prompt corpus, so AIPerf's prompts encode and decode back
to the same token count. Needs the `tokenizers` package (installed with aiperf).

Usage: stub_tokenizer.py OUTDIR [CORPUS]   (CORPUS: default, AIPerf's shakespeare.txt)
"""
import json
import os
import sys
from pathlib import Path


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    if len(sys.argv) > 2:
        corpus = Path(sys.argv[2])
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
