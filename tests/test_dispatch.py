"""``Dispatch``: rules (max_m, design) of one GEMM, validated with one message shape, picked by M, plain data."""

from __future__ import annotations

import json

import pytest

import tslab
from tslab import Design, DesignError, Dispatch
from tslab.core.schema import dispatch_schema, validate_dispatch_document
from tslab.kernels import attention_sm90, gemm_sm90, tma_copy

SMALL = gemm_sm90.design(**gemm_sm90.DECODE)
MIDDLE = gemm_sm90.design(tile_n=128, stages=5, cluster_m=2)
LARGE = gemm_sm90.design()


@pytest.fixture(scope="module")
def three() -> Dispatch:
    return Dispatch([(128, SMALL), (384, MIDDLE), (None, LARGE)])


def test_is_a_public_name():
    assert "Dispatch" in tslab.__all__ and tslab.Dispatch is Dispatch


@pytest.mark.parametrize(("m", "index"), [(1, 0), (127, 0), (128, 0), (129, 1), (256, 1), (384, 1), (385, 2),
                                          (512, 2), (1 << 20, 2)])
def test_picks_the_first_rule_whose_bound_m_does_not_exceed(three, m, index):
    assert three.pick((m, 8192, 8192)) == (index, three.designs[index])


def test_one_rule_serves_every_m():
    one = Dispatch([(None, LARGE)])
    assert one.pick((1, 8, 8)) == one.pick((10**6, 8, 8)) == (0, LARGE)
    assert one.ranges() == ["every M"]


def test_pick_needs_a_shape_with_m(three):
    with pytest.raises(DesignError, match=r"dispatch 'gemm_sm90': shape=\(\) has no M\n  hint: pass the problem's"):
        three.pick(())


@pytest.mark.parametrize(("rules", "key", "match"), [
    ([], "M", r"^\[input\] dispatch: rules=\[\] is empty\n  hint: give at least one rule; the last one, "
              r"\(None, design\), serves every M$"),
    (5, "M", r"dispatch: rules=5 is not a list of \(max_m, design\) pairs\n  hint: pass e\.g\."),
    ([(None, LARGE)], "N", r"dispatch: key='N' is not supported\n  hint: use one of 'M'"),
    ([(128, SMALL)], "M", r"dispatch 'gemm_sm90' rule 1: max_m=128 is the last rule's bound\n  hint: make it None"),
    ([(None, SMALL), (None, LARGE)], "M",
     r"dispatch 'gemm_sm90' rule 1: max_m=None is not the last rule's bound\n  hint: only the last rule serves"),
    ([(0, SMALL), (None, LARGE)], "M", r"rule 1: max_m=0 is not a positive int\n  hint: give the largest M"),
    ([(True, SMALL), (None, LARGE)], "M", r"rule 1: max_m=True is not a positive int"),
    ([(128.0, SMALL), (None, LARGE)], "M", r"rule 1: max_m=128\.0 is not a positive int"),
    ([(256, SMALL), (128, MIDDLE), (None, LARGE)], "M",
     r"dispatch 'gemm_sm90' rule 2: max_m=128 is not above rule 1's 256\n  hint: list the rules by ascending max_m"),
    ([(128, SMALL), (128, MIDDLE), (None, LARGE)], "M", r"rule 2: max_m=128 is not above rule 1's 128"),
    ([(128, "decode"), (None, LARGE)], "M",
     r"dispatch rule 1: design='decode' is not a Design\n  hint: build one with tslab\.kernels\.gemm_sm90\.design"),
    ([(128, tma_copy.design()), (None, LARGE)], "M",
     r"dispatch 'tma_copy' rule 1: kernel='tma_copy' is not a GEMM \(its package is 'copy'\)\n  hint: a dispatch "
     r"by M picks among designs of a catalog GEMM"),
    ([(128, SMALL), (None, tma_copy.design())], "M", r"rule 2: kernel='tma_copy' is not a GEMM"),
    ([(128, SMALL), (None, gemm_sm90.design(dtype="bf16"))], "M",
     r"dispatch 'gemm_sm90' rule 2: dtype='bf16' differs from rule 1's 'fp16'\n  hint: one package takes one "
     r"dtype: give every design dtype='fp16'"),
])
def test_invalid_rules_name_the_rule_the_field_and_the_fix(rules, key, match):
    with pytest.raises(DesignError, match=match):
        Dispatch(rules, key)


def test_a_design_of_the_users_own_tasks_is_not_a_catalog_gemm():
    own = Design.from_tasks(*_own_tasks())
    with pytest.raises(DesignError, match=r"rule 1: kernel='custom' is not a GEMM \(it has no GPU kernel in the "
                                          r"catalog\)"):
        Dispatch([(None, own)])


def _own_tasks() -> tuple:
    blueprint = tma_copy.build()
    return blueprint.tasks, blueprint.graph


def test_ranges_name_both_ends(three):
    assert three.ranges() == ["M <= 128", "129 <= M <= 384", "M >= 385"]


def test_round_trip_through_plain_data_and_json(three):
    data = three.to_dict()
    assert data["tslab_dispatch"] == 1 and data["key"] == "M"
    assert [r["max_m"] for r in data["rules"]] == [128, 384, None]
    assert data["rules"][0]["design"] == SMALL.to_dict()
    assert Dispatch.from_dict(data) == three
    assert Dispatch.from_json(three.to_json()) == three
    assert json.loads(three.to_json(indent=None)) == data


def test_the_json_shape_is_checked_against_the_schema(three):
    validate_dispatch_document(three.to_dict())
    assert dispatch_schema()["$id"] == "https://tslab/schemas/dispatch.v1.json"


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda d: d.pop("tslab_dispatch"), r"dispatch JSON: has no 'tslab_dispatch' key\n  hint: pass the text written "
                                        r"by Dispatch\.to_json\(\)"),
    (lambda d: d.update(key="K"), r"dispatch JSON: key=\"K\" is not allowed\n  hint: key must be the extent"),
    (lambda d: d.update(rules=[]), r"dispatch JSON: rules=\[\] has 0 items"),
    (lambda d: d["rules"][0].update(max_m=-1), r"rules\[0\]\.max_m=-1 is not allowed\n  hint: rules\[0\]\.max_m must "
                                               r"be a positive integer, or null on the last rule"),
    (lambda d: d["rules"][1].update(max_m="384"), r"rules\[1\]\.max_m=\"384\" is a string"),
    (lambda d: d["rules"][2].update(extra=1), r"unknown key 'rules\[2\]\.extra'"),
    (lambda d: d["rules"][0]["design"].update(bogus=1), r"unknown key 'rules\[0\]\.design\.bogus'"),
])
def test_wrong_shapes_name_the_path_and_what_is_allowed(three, mutate, match):
    data = three.to_dict()
    mutate(data)
    with pytest.raises(DesignError, match=match):
        Dispatch.from_dict(data)


def test_not_json_at_all():
    with pytest.raises(DesignError, match=r"dispatch JSON: not valid JSON .*\n  hint: pass the text written by "
                                          r"Dispatch\.to_json\(\)"):
        Dispatch.from_json("{")


def test_rules_read_from_json_are_validated_like_any_others(three):
    data = three.to_dict()
    data["rules"][0]["max_m"] = 500
    with pytest.raises(DesignError, match=r"rule 2: max_m=384 is not above rule 1's 500"):
        Dispatch.from_dict(data)


def test_with_params_sets_them_on_every_design(three):
    bf16 = three.with_params(dtype="bf16")
    assert [d.params["dtype"] for d in bf16.designs] == ["bf16"] * 3
    assert bf16.designs[0] == SMALL.with_params(dtype="bf16")


def test_text_and_mime_bundle_show_the_table(three):
    text = three.text()
    assert text.splitlines() == [
        "gemm_sm90 by M, 3 designs, dtype fp16:",
        "  M <= 128         tile_m=64, tile_n=128, stages=8, mma_warpgroups=1, cluster_m=2",
        "  129 <= M <= 384  tile_n=128, stages=5, cluster_m=2",
        "  M >= 385         the kernel's defaults",
    ]
    assert repr(three) == text
    bundle = three._repr_mimebundle_()
    assert bundle["text/plain"] == text
    assert ("<td style='text-align:left'><span style='white-space:nowrap'>129 &lt;= M &lt;= 384</span></td>"
            "<td style='text-align:left'>tile_n=128, stages=5, cluster_m=2</td>") in bundle["text/html"]


def test_the_table_names_edits():
    edited = LARGE.with_pipeline("smem_ab", num_stages=2)
    assert Dispatch([(None, edited)]).table() == [("every M", "the kernel's defaults; edited: smem_ab")]


# -- a dispatch of attention designs: by causal, then seqlen_k ---------------------------------------------------
SHORT = attention_sm90.design(persistent=True, q_stages=2)
LONG = attention_sm90.design()
CAUSAL = attention_sm90.design(causal=True)


@pytest.fixture(scope="module")
def by_seqlen() -> Dispatch:
    return Dispatch([(2048, SHORT), (None, LONG), (None, CAUSAL)], key="seqlen_k")


@pytest.mark.parametrize(("causal", "seqlen_k", "index"), [(False, 1, 0), (False, 2048, 0), (False, 2049, 1),
                                                           (True, 1, 2), (True, 2048, 2), (True, 1 << 20, 2)])
def test_an_attention_dispatch_picks_by_causal_then_seqlen_k(by_seqlen, causal, seqlen_k, index):
    assert by_seqlen.variant == "causal"
    assert by_seqlen.pick((4, 7, seqlen_k, 32, 8), causal=causal) == (index, by_seqlen.designs[index])


def test_an_attention_dispatch_names_its_ranges_per_causal_value(by_seqlen):
    assert by_seqlen.ranges() == ["causal=False: seqlen_k <= 2048", "causal=False: seqlen_k >= 2049",
                                  "causal=True: every seqlen_k"]
    assert by_seqlen.text().splitlines() == [
        "attention_sm90 by causal and seqlen_k, 3 designs, dtype bf16:",
        "  causal=False: seqlen_k <= 2048  q_stages=2, persistent=True",
        "  causal=False: seqlen_k >= 2049  the kernel's defaults",
        "  causal=True: every seqlen_k     the kernel's defaults",
    ]


def test_an_attention_dispatch_round_trips_with_its_bound_named_by_its_key(by_seqlen):
    data = by_seqlen.to_dict()
    assert data["key"] == "seqlen_k" and [r["max_seqlen_k"] for r in data["rules"]] == [2048, None, None]
    assert Dispatch.from_json(by_seqlen.to_json()) == by_seqlen
    data["rules"][0]["max_m"] = data["rules"][0].pop("max_seqlen_k")
    with pytest.raises(DesignError, match=r"dispatch JSON: rules\[0\]\.max_m is not the bound of a dispatch by "
                                          r"seqlen_k\n  hint: give each rule max_seqlen_k"):
        Dispatch.from_dict(data)
    data["rules"][0].pop("max_m")
    with pytest.raises(DesignError, match=r"rules\[0\] has no max_seqlen_k"):
        Dispatch.from_dict(data)


@pytest.mark.parametrize(("call", "match"), [
    (lambda d: d.pick((4, 2048, 2048, 32, 32)), r"dispatch 'attention_sm90': pick\(shape, no keyword\) does not say "
                                                r"the call's causal\n  hint: a dispatch of 'attention_sm90' picks by "
                                                r"causal first: pick\(shape, causal=False\)"),
    (lambda d: d.pick((4, 2048, 2048, 32, 32), dtype="bf16"), r"pick\(shape, dtype=\.\.\.\) does not say the call's "
                                                              r"causal"),
    (lambda d: d.pick((4, 2048)), r"shape=\(4, 2048\) has no seqlen_k\n  hint: pass the problem's shape, e\.g\. "
                                  r"\(batch, seqlen_q, seqlen_k, heads, heads_kv\)"),
    (lambda d: d.pick((4, 2048, 2048, 32, 32), causal=None), r"causal=None has no rules\n  hint: pass one of False, "
                                                             r"True"),
])
def test_an_attention_pick_says_what_the_call_lacks(by_seqlen, call, match):
    with pytest.raises(DesignError, match=match):
        call(by_seqlen)


def test_a_gemm_pick_takes_no_variant(three):
    with pytest.raises(DesignError, match=r"pick\(shape, causal=\.\.\.\) names a variant, but a dispatch of "
                                          r"'gemm_sm90' picks by M alone\n  hint: pass the shape alone"):
        three.pick((128, 8, 8), causal=False)


@pytest.mark.parametrize(("rules", "key", "match"), [
    ([(None, LONG)], "seqlen_k", r"dispatch 'attention_sm90': no rule serves causal=True\n  hint: a call may pass "
                                 r"causal=True: add a rule \(None, a design with causal=True\)"),
    ([(None, SHORT), (None, LONG), (None, CAUSAL)], "seqlen_k",
     r"rule 1: max_seqlen_k=None is not the last rule's bound among the rules of causal=False"),
    ([(None, LONG), (None, CAUSAL), (2048, SHORT)], "seqlen_k",
     r"rule 3: causal=False comes after the rules of causal=True\n  hint: list the rules of each value of causal "
     r"together, each group by ascending max_seqlen_k"),
    ([(1024, CAUSAL), (None, LONG)], "seqlen_k",
     r"rule 1: max_seqlen_k=1024 is the last rule's bound among the rules of causal=True\n  hint: make it None, so "
     r"every larger seqlen_k has a design"),
    ([(None, LONG), (None, attention_sm90.design(causal=True, **attention_sm90.HEAD_DIM_64))], "seqlen_k",
     r"rule 2: head_dim=64 differs from rule 1's 128\n  hint: one package takes one head_dim: give every design "
     r"head_dim=128"),
    ([(None, LONG), (None, CAUSAL)], "M",
     r"rule 1: kernel='attention_sm90' is not a GEMM \(its package is 'attention'\)\n  hint: a dispatch by M picks "
     r"among designs of a catalog GEMM, e\.g\. tslab\.kernels\.gemm_sm90; a dispatch of 'attention_sm90' designs "
     r"is keyed by seqlen_k \(key='seqlen_k'\)"),
    ([(None, LARGE)], "seqlen_k", r"rule 1: kernel='gemm_sm90' is not an attention \(its package is 'gemm'\)\n  "
                                  r"hint: a dispatch by seqlen_k picks among designs of a catalog attention"),
])
def test_invalid_attention_rules_name_the_rule_the_field_and_the_fix(rules, key, match):
    with pytest.raises(DesignError, match=match):
        Dispatch(rules, key)


def test_the_measured_attention_tables_are_valid_dispatches():
    from tslab.kernels import attention_sm90_dispatch

    d128 = attention_sm90_dispatch.tuned("fp16")
    assert d128.key == "seqlen_k" and {d.params["dtype"] for d in d128.designs} == {"fp16"}
    assert d128.pick((4, 2048, 2048, 32, 32), causal=False)[1].params["persistent"] is True
    d128_causal = [d128.pick((4, s, s, 32, 32), causal=True)[1].params for s in (2048, 2049, 4096, 4097)]
    assert [(p["persistent"], p["causal_order"]) for p in d128_causal] == [
        (True, "longest_first_zigzag"), (True, "longest_first"), (True, "longest_first"), (False, "by_pair")]
    assert d128.pick((4, 4097, 4097, 32, 32), causal=True)[1] == attention_sm90.design(causal=True, dtype="fp16")
    d64 = attention_sm90_dispatch.tuned(head_dim=64)
    assert {d.params["mma_warpgroups"] for d in d64.designs} == {3}
    assert [d64.pick((4, 2048, s, 32, 32), causal=False)[1].params["persistent"] for s in (8192, 8193)] == [True, False]
    causal_picks = [d64.pick((4, s, s, 32, 32), causal=True)[1].params for s in (4096, 4097)]
    assert [(p["persistent"], p["causal_order"]) for p in causal_picks] == [(True, "longest_first_all"),
                                                                           (False, "by_pair")]
    with pytest.raises(DesignError, match=r"head_dim=96 has no measured table\n  hint: pass one of 128, 64"):
        attention_sm90_dispatch.tuned(head_dim=96)


@pytest.fixture(scope="module")
def by_m_and_k() -> Dispatch:
    """M <= 128 one design; up to M = 4096 another where K <= 4096; every other problem the defaults."""
    return Dispatch([(128, SMALL), ({"M": 4096, "K": 4096}, MIDDLE), (None, LARGE)])


@pytest.mark.parametrize(("shape", "index"), [
    ((128, 8192, 8192), 0), ((129, 8192, 4096), 1), ((4096, 64, 4096), 1), ((4096, 8192, 4104), 2),
    ((4097, 8192, 4096), 2), ((129, 8192, 8192), 2), ((1, 8, 10**6), 0)])
def test_a_rule_may_bound_k_beside_m(by_m_and_k, shape, index):
    assert by_m_and_k.pick(shape) == (index, by_m_and_k.designs[index])


def test_rules_that_bound_k_say_so_in_words_and_in_plain_data(by_m_and_k):
    assert by_m_and_k.keys == ("M", "K")
    assert by_m_and_k.ranges() == ["M <= 128", "129 <= M <= 4096, K <= 4096", "M >= 129, otherwise"]
    assert by_m_and_k.text().splitlines()[0] == "gemm_sm90 by M and K, 3 designs, dtype fp16:"
    data = by_m_and_k.to_dict()
    assert [{k: v for k, v in r.items() if k != "design"} for r in data["rules"]] == [
        {"max_m": 128}, {"max_m": 4096, "max_k": 4096}, {"max_m": None}]
    validate_dispatch_document(data)
    assert Dispatch.from_dict(data) == by_m_and_k and Dispatch.from_json(by_m_and_k.to_json()) == by_m_and_k


def test_a_dict_bound_of_m_alone_is_the_plain_bound():
    assert Dispatch([({"M": 128, "K": None}, SMALL), (None, LARGE)]) == Dispatch([(128, SMALL), (None, LARGE)])


def test_a_k_bound_needs_a_shape_with_k(by_m_and_k):
    with pytest.raises(DesignError, match=r"dispatch 'gemm_sm90': shape=\(256,\) has no K\n  hint: pass the"):
        by_m_and_k.pick((256,))


@pytest.mark.parametrize(("rules", "match"), [
    ([({"M": 128, "B": 4}, SMALL), (None, LARGE)],
     r"dispatch 'gemm_sm90' rule 1: bound \{'M': 128, 'B': 4\} names 'B', which a dispatch by M does not compare\n"
     r"  hint: bound M \(and N, K\) only"),
    ([({"M": 128, "K": 0}, SMALL), (None, LARGE)], r"rule 1: max_k=0 is not a positive int\n  hint: give the "),
    ([(128, SMALL), ({"M": None, "K": 4096}, LARGE)],
     r"rule 2: max_k=4096 bounds the last rule\n  hint: the last rule serves every problem the others do not"),
    ([({"M": 4096, "K": 4096}, SMALL), (512, MIDDLE), (None, LARGE)],
     r"rule 2: max_m=512 is not above rule 1's 4096\n  hint: list the rules by ascending max_m"),
    ([(4096, SMALL), ({"M": 4096, "K": 4096}, MIDDLE), (None, LARGE)], r"rule 2: serves no problem: rule 1 comes"),
    ([({"M": 4096, "K": 8192}, SMALL), ({"M": 4096, "K": 4096}, MIDDLE), (None, LARGE)],
     r"rule 2: serves no problem: rule 1 comes first and serves every problem this one would\n  hint: put it before "
     r"rule 1, or drop it"),
])
def test_invalid_k_bounds_name_the_rule_and_the_fix(rules, match):
    with pytest.raises(DesignError, match=match):
        Dispatch(rules)


def test_a_k_bound_in_plain_data_is_checked_like_the_others(by_m_and_k):
    data = by_m_and_k.to_dict()
    data["rules"][1]["max_k"] = "4096"
    with pytest.raises(DesignError, match=r"rules\[1\]\.max_k=\"4096\" is a string"):
        Dispatch.from_dict(data)
    data["rules"][1].update(max_k=4096, max_seqlen_k=5)
    with pytest.raises(DesignError, match=r"rules\[1\]\.max_seqlen_k is not the bound of a dispatch by M"):
        Dispatch.from_dict(data)


def test_a_design_two_rules_share_is_one_design_and_the_table_says_so():
    shared = Dispatch([(128, SMALL), (384, MIDDLE), ({"M": 4096, "N": 4096, "K": 4096}, SMALL), (None, LARGE)])
    assert shared.designs == (SMALL, MIDDLE, LARGE) and shared.rule_designs == (0, 1, 0, 2)
    assert shared.pick((1000, 4096, 4096)) == (0, SMALL) and shared.pick((1000, 4104, 4096)) == (2, LARGE)
    assert shared.spans() == ["M <= 128 or 385 <= M <= 4096, N <= 4096, K <= 4096", "129 <= M <= 384",
                              "M >= 385, otherwise"]
    assert shared.text().splitlines()[0] == "gemm_sm90 by M, N and K, 3 designs in 4 rules, dtype fp16:"
    html_table = shared._repr_html_()
    assert "<th style='white-space:nowrap;text-align:left'>M, N and K</th>" in html_table
    # a range of several bounds may wrap between them, never inside one
    assert ("<td style='text-align:left'><span style='white-space:nowrap'>385 &lt;= M &lt;= 4096</span>, "
            "<span style='white-space:nowrap'>N &lt;= 4096</span>, <span style='white-space:nowrap'>K &lt;= 4096</span>"
            "</td>") in html_table
