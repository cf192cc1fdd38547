"""``ut tokenizer train``, ``ut translate`` and ``ut average``: the machine-translation commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import ConfigError
from ..data.parallel import ParallelFormatError, read_lines
from ..data.textfile import decode_text_lines
from ..data.tokenizer import MODEL_TYPES, TokenizerError, train_tokenizer
from ..registry import build_task
from ..training.averaging import average_checkpoints
from .run import add_device_argument, add_threads_argument, load_model, load_run, set_threads


def add_translation_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("tokenizer", help="sub-word tokenizers (sentencepiece): 'ut tokenizer train ...'")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    t = actions.add_parser(
        "train", help="train one sentencepiece model on the source and target training text",
        description="Trains a sentencepiece model (one vocabulary for every --input file, e.g. both sides of the "
        "training data) with the models' special ids: pad 0, bos 1, eos 2, unk 3. Files may be gzipped.",
    )
    t.add_argument("--input", nargs="+", type=Path, required=True, help="text files, one sentence per line (.gz ok)")
    t.add_argument("--vocab-size", type=int, required=True, help="pieces in the vocabulary, e.g. 8000")
    t.add_argument("--out", type=Path, required=True, help="the model file to write, e.g. runs/mt/spm-bpe8k.model")
    t.add_argument("--model-type", choices=MODEL_TYPES, default="bpe", help="bpe (default, as the Transformer) or unigram")
    t.add_argument("--character-coverage", type=float, default=1.0,
                   help="share of characters the vocabulary covers (1.0 for small alphabets; 0.9995 for e.g. Chinese)")
    t.add_argument("--max-lines", type=int, default=None, help="read at most this many lines of each file")
    t.add_argument("--threads", type=int, default=1)
    t.set_defaults(run=run_tokenizer_train)

    p = commands.add_parser(
        "translate", help="translate text with a trained translation run (beam search, detokenised)",
        description="Translates every line of --input-file (default: standard input), or --input, writing one "
        "detokenised translation per input line, in order. Beam search with the key/value cache; defaults "
        "(beam, length penalty, maximum length) come from the run's task options.",
    )
    p.add_argument("run_dir", type=Path)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--input", help="one sentence to translate")
    source.add_argument("--input-file", type=Path, default=Path("-"), help="one sentence per line (.gz ok); '-' = stdin")
    p.add_argument("--model", type=Path, default=None, help="a saved model folder, e.g. from 'ut average' (default RUN_DIR/best)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override task options, e.g. --set task.tokenizer=moved/spm.model (its checksum must match)")
    p.add_argument("--beam", type=int, default=None, metavar="K", help="beams (1 = greedy; default task.beam_size)")
    p.add_argument("--length-penalty", type=float, default=None, help="GNMT alpha (default task.length_penalty)")
    p.add_argument("--max-length-a", type=float, default=None, help="output length <= a * source length + b")
    p.add_argument("--max-length-b", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=None, help="sentences decoded together (default task.eval_batch_size)")
    p.add_argument("--steps", type=int, default=None, help="recurrent steps at inference (ACT: the step limit)")
    add_device_argument(p)
    add_threads_argument(p)
    p.set_defaults(run=run_translate)

    p = commands.add_parser(
        "average", help="average the weights of a run's last N checkpoints into a saved model",
        description="Writes the elementwise mean of the model weights of RUN_DIR's newest N checkpoints "
        "(RUN_DIR/checkpoints) to --out in save_pretrained format; evaluate it with "
        "'ut eval RUN_DIR --model OUT' or 'ut translate RUN_DIR --model OUT'.",
    )
    p.add_argument("run_dir", type=Path)
    p.add_argument("--last", type=int, required=True, metavar="N", help="how many of the newest checkpoints")
    p.add_argument("--out", type=Path, required=True, help="folder for the averaged model")
    p.set_defaults(run=run_average)


def run_tokenizer_train(args: argparse.Namespace) -> int:
    texts: list[str] = []
    try:
        for path in args.input:
            texts += read_lines(path)[: args.max_lines]
        tokenizer = train_tokenizer(texts, args.out, vocab_size=args.vocab_size, model_type=args.model_type,
                                    character_coverage=args.character_coverage, threads=args.threads)
    except (ParallelFormatError, TokenizerError) as err:
        raise ConfigError(str(err)) from None
    print(f"wrote {args.out}: {args.model_type}, {tokenizer.vocab_size} pieces from {len(texts)} lines, "
          f"sha256 {tokenizer.sha256}")
    return 0


def run_translate(args: argparse.Namespace) -> int:
    set_threads(args.threads)
    experiment = load_run(args.run_dir, args.overrides)
    task = build_task(experiment.task, seed=experiment.train.task_seed)
    if not hasattr(task, "translate"):
        raise ConfigError(f"{args.run_dir} is a {task.name!r} run; 'ut translate' takes translation runs (see 'ut generate')")
    if args.beam is not None and args.beam < 1:
        raise ConfigError(f"--beam must be >= 1, got {args.beam}")
    try:
        if args.input is not None:
            texts = [args.input]
        elif str(args.input_file) == "-":
            texts = decode_text_lines(sys.stdin.buffer.read(), "<stdin>", ParallelFormatError, lone_cr=False)
        else:
            texts = read_lines(args.input_file)
    except ParallelFormatError as err:
        raise ConfigError(str(err)) from None
    model = load_model(args.run_dir, args.model, args.device, steps=args.steps, task=task)
    translations = task.translate(model, texts, beam_size=args.beam, length_penalty=args.length_penalty,
                                  max_length_a=args.max_length_a, max_length_b=args.max_length_b,
                                  batch_size=args.batch_size)
    for line in translations:
        print(line)
    return 0


def run_average(args: argparse.Namespace) -> int:
    model, paths = average_checkpoints(args.run_dir, args.last, args.out)
    print(f"averaged {len(paths)} checkpoints ({', '.join(p.name for p in paths)}) of {args.run_dir}; "
          f"wrote {args.out} ({model.num_parameters():,} parameters)")
    return 0
