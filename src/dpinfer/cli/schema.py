"""``dpinfer schema draft | check``: the public schema of a data set.

``dpinfer schema draft data.parquet -o schema.yaml`` writes a draft from the file's column names
and types only (:func:`dpinfer.data.draft_schema`): every bound is a placeholder
(``lower: null  # FILL IN ...``) for the data owner to fill from public knowledge of the domain;
no value, minimum, maximum or category is read from the data. ``dpinfer schema check --schema
schema.yaml --data data.parquet`` validates a file against a schema (naming the column and the
rule of the first mismatch, never a value) and prints the schema, which is public.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..data import Schema, draft_schema, read_table
from .common import Refusal, add_command, write_text_atomic


def _draft(args: argparse.Namespace) -> int:
    text = draft_schema(args.data, dataset=args.dataset)
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    if out.exists() and not args.force:
        raise Refusal(f"{out} exists; pass --force to overwrite it (a filled-in schema would be lost).")
    path = write_text_atomic(out, text)
    print(f"wrote a DRAFT schema to {path}: fill in every 'FILL IN' bound from public knowledge of the "
          "domain (never from the data) before using it")
    return 0


def _check(args: argparse.Namespace) -> int:
    schema = Schema.load(args.schema)
    if args.data:
        table = read_table(args.data, schema=schema)
        print(f"{args.data}: {table.n_rows} rows match the schema")
    print(schema.describe())
    return 0


def register(subparsers: Any) -> None:
    """Add ``dpinfer schema`` (``draft``, ``check``) to the command line."""
    p = add_command(subparsers, "schema", help="a data set's public schema: draft one, check a file")
    sub = p.add_subparsers(dest="schema_command", metavar="ACTION", required=True)
    d = add_command(sub, "draft", help="draft a schema from a file's column names and types (bounds to fill)",
                    description=__doc__)
    d.add_argument("data", help="the data file: CSV (header row), Parquet or Arrow IPC")
    d.add_argument("-o", "--out", help="schema file to write (.yaml; default: standard output)")
    d.add_argument("--dataset", help="the data set's name (its budget's name; default: the file stem)")
    d.add_argument("--force", action="store_true", help="overwrite an existing schema file")
    d.set_defaults(func=_draft)
    c = add_command(sub, "check", help="validate a data file against a schema; print the schema")
    c.add_argument("--schema", required=True, help="the schema file (YAML/JSON/TOML)")
    c.add_argument("--data", help="a data file to validate against it")
    c.set_defaults(func=_check)
