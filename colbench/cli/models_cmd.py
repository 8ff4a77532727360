"""``colbench models tiny PATH [--family llama|qwen2] [--layers N] [--hidden-size N] [--seed S]
[--vocab FILE] [--overwrite]``: write a tiny random chat model and its tokenizer, built in code,
for trying ``hf:`` models and the trainers where no weights can be downloaded.

``models`` is a group so that other model utilities have a place beside ``tiny``. The builder
is :func:`colbench.models.tiny.build_tiny_model`; it needs ``colbench[hf]``, and without it the
command prints the one-line install hint (``MissingExtraError``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from colbench.models.tiny import FAMILIES

    group = subparsers.add_parser(
        "models", help="make a tiny random chat model for offline tries",
        description="Model utilities. 'colbench models tiny PATH' writes a tiny random chat "
                    "model that 'hf:PATH' loads, without hub access.")
    group.set_defaults(func=lambda args: _usage(group))
    actions = group.add_subparsers(dest="models_command", metavar="ACTION")
    tiny = actions.add_parser(
        "tiny", help="write a tiny random chat model and tokenizer",
        description="Write a tiny chat model with random weights and its tokenizer (trained "
                    "here on a few sentences, with a chat template) to PATH. 'colbench "
                    "evaluate ENV --model hf:PATH' runs it and 'colbench train NAME --model "
                    "hf:PATH' trains it. Its replies are nonsense: it is for trying the "
                    "pipeline without downloading weights. The same arguments write the same "
                    "files.")
    tiny.add_argument("path", type=Path, metavar="PATH", help="folder to write the model to")
    tiny.add_argument("--family", choices=FAMILIES, default="llama",
                      help="llama: word-level tokenizer on a Llama; qwen2: byte-level BPE "
                           "with ChatML on a Qwen2 (default: llama)")
    tiny.add_argument("--layers", type=int, default=2, metavar="N",
                      help="decoder layers (default: 2)")
    tiny.add_argument("--hidden-size", type=int, default=32, metavar="N",
                      help="hidden width, a multiple of 8 (default: 32)")
    tiny.add_argument("--seed", type=int, default=0, metavar="S",
                      help="seed of the random weights (default: 0)")
    tiny.add_argument("--vocab", action="append", type=Path, default=[], metavar="FILE",
                      help="text file whose words the tokenizer learns besides its built-in "
                           "sentences (repeatable); llama maps unknown words to <unk>")
    tiny.add_argument("--overwrite", action="store_true",
                      help="write into PATH even if it is not empty (files of the same "
                           "names are replaced)")
    tiny.set_defaults(func=run_tiny)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_tiny(args: argparse.Namespace) -> int:
    from colbench.models.tiny import build_tiny_model, read_texts

    texts = read_texts(args.vocab)
    path = build_tiny_model(args.path, family=args.family, seed=args.seed, layers=args.layers,
                            hidden_size=args.hidden_size, texts=texts,
                            overwrite=args.overwrite)
    layers = f"{args.layers} layer{'s' if args.layers != 1 else ''}"
    print(f"wrote a tiny random {args.family} ({layers}, hidden size {args.hidden_size}, "
          f"seed {args.seed}) to {path}")
    print(f"its weights are random, so it says nonsense; run it with --model "
          f"hf:{spec_path(path)}")
    return 0


def spec_path(path: Path) -> str:
    """``path`` as an ``hf:`` spec reads it as a folder: a bare relative name (``tiny``)
    would read as a hub id once the folder is gone, so it gets a ``./``."""
    text = str(path)
    return text if text.startswith((".", "/", "~")) else f"./{text}"
