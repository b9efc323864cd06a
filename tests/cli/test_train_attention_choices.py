"""`train --attention` offers the attention kinds the engine names, read from the one torch-free table."""
import argparse
import subprocess
import sys

from explorer.core.attention_kinds import ATTENTION_KINDS, attention_kind
from explorer.tools import train_cmd


def attention_choices() -> tuple[str, ...]:
    parser = argparse.ArgumentParser()
    train_cmd.add_arguments(parser)
    return next(action.choices for action in parser._actions if action.dest == "attention")


def test_the_choices_are_every_kind_the_rule_names_and_no_other():
    named = {attention_kind(q, kv) for q in range(1, 17) for kv in range(1, q + 1) if q % kv == 0}
    assert named | {attention_kind(8, 8, latent=True)} == set(ATTENTION_KINDS)
    assert tuple(attention_choices()) == ATTENTION_KINDS


def test_the_trained_variants_are_the_same_table():
    from explorer.train import variants  # needs transformers, which the parser must not import

    assert variants.ATTENTION_KINDS is ATTENTION_KINDS


def test_building_the_parser_imports_neither_torch_nor_transformers():
    code = ("import sys, explorer.cli; explorer.cli.build_parser(); "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False False"
