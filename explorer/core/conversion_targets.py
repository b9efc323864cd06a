"""What a loaded model can be converted to in a what-if (core.convert), and why not: the one rule the conversion
refuses by and the KV lab offers its targets by, with the sentence each refusal is said in.
"""
from __future__ import annotations

from explorer.core.kv_variants import VariantRow, conversion_rank_limit, conversion_rope_pairs


def mla_refusal(name: str, qk_norm: bool, layer_kinds: tuple[str, ...]) -> str:
    """Why a conversion to MLA cannot reproduce this model ("" where it can): a latent shared by every head, up-
    projected to keys, cannot apply a norm to each head's keys nor a window to some layers' keys. The one rule of
    the conversion (convert.to_mla refuses with it) and of the targets the app offers (what_if_targets)."""
    causes = (["normalises each head's queries and keys"] if qk_norm else []) + \
             (["slides a window over the keys in some layers"] if "sliding" in layer_kinds else [])
    if not causes:
        return ""
    return (f"{name} {' and '.join(causes)}, which a shared latent cannot reproduce: MLA conversion supports "
            "GPT-2, Llama and Qwen2 style layers.")


def offered_rank_limit(info) -> int:
    """The highest MLA rank offered as a what-if target of a loaded model (its ModelInfo): the rank of its K/V
    stack as conversion_rank_limit bounds it without knowing the bias (d_model bounds it)."""
    pairs = conversion_rope_pairs(info.d_qk, info.positional == "rope")
    return conversion_rank_limit(info.n_kv_heads, info.d_qk, info.d_model, pairs)


def what_if_targets(info, rows: list[VariantRow]) -> list[str]:
    """The variants of `rows` that the what-if conversion can turn this loaded model into: the other
    head counts, and MLA at ranks within the K/V stack's rank (without knowing the bias, d_model bounds
    it) where mla_refusal allows it. A model trained with MLA has none, and an encoder or an encoder-decoder
    none either (the conversion builds decoder-only models)."""
    if info.mla_rank is not None or info.is_encoder_only or info.is_encoder_decoder:
        return []
    limit = offered_rank_limit(info)
    refused = bool(mla_refusal(info.name, info.qk_norm, info.layer_kinds))
    return [row.variant.name for row in rows if not row.variant.native
            and (row.variant.kind != "mla" or (not refused and row.variant.latent_rank <= limit))]


def why_no_targets(model) -> str:
    """Why the loaded model (a ModelInfo) offers no what-if target, from what the model is (what_if_targets' own
    refusals); "" where nothing in the model forbids one."""
    if model.is_encoder_only:
        return (f"What-if conversions compare the next-token predictions of the converted model with the "
                f"original's; {model.name} is an encoder and predicts none, and keeps no KV cache between steps.")
    if model.mla_rank is not None:
        return (f"{model.name} was trained with MLA: a what-if conversion starts from per-head keys and values, "
                "which it does not have.")
    if model.is_encoder_decoder:
        return f"{model.name} is an encoder–decoder: the what-if conversion builds decoder-only models."
    return ""


def why_no_mla(model, rows: list[VariantRow]) -> str:
    """Why the comparison's MLA rows (`rows`) are not offered as what-if targets of the loaded `model` (its
    ModelInfo; "" where one is, or there are none): a sliding-window Gemma listed MLA variants in the KV lab and
    offered only mha and gqa-2, without a word (drive26)."""
    ranks = [row.variant.latent_rank for row in rows if row.variant.kind == "mla"]
    if not ranks or model.mla_rank is not None:
        return ""
    refused = mla_refusal(model.name, model.qk_norm, model.layer_kinds)
    if refused:
        return f"No MLA target: {refused}"
    limit = offered_rank_limit(model)
    if min(ranks) > limit:
        return (f"No MLA target: the table's MLA ranks are above {limit:,}, the rank of {model.name}'s K/V "
                "stack, the most a latent converted from it can hold.")
    return ""
