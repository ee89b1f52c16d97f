"""qwen_gdn.megatron against a stand-in shaped like Megatron-Core's GatedDeltaNet (its forward's
parameters, _apply_gated_norm, causal_conv1d in the module): patch and unpatch, the refusal of a
layer it does not know, which calls run the stock forward, and the packed-sequence argument
checks. No torch, no GPU, no Megatron-Core; test_megatron_gpu.py runs the real layer."""

import sys
import types
import warnings

import pytest
from stand_ins import Device, Fake

from qwen_gdn import megatron

LAYER_SOURCE = '''
def causal_conv1d(**kwargs):
    raise AssertionError("the stand-in's convolution is not run on the CPU")


class _GDNBase:
    def _apply_gated_norm(self, x, gate):
        return x


class GatedDeltaNet(_GDNBase):
    def __init__(self, **attributes):
        self.calls = []
        self.config = Config()
        self.in_proj = self.conv1d = self.out_proj = self.A_log = self.dt_bias = object()
        self.feat_dim_split = (6144, 2048, 16, 16)
        self.qk_dim_local_tp, self.v_dim_local_tp = 2048, 2048
        self.key_head_dim = self.value_head_dim = 128
        self.use_qk_l2norm, self.activation, self.conv_bias = True, "silu", False
        self.cp_size = self.sp_size = 1
        self.recompute_norm_out = False
        for name, value in attributes.items():
            setattr(self, name, value)

    def forward(self, hidden_states, attention_mask, inference_context=None,
                packed_seq_params=None, sequence_len_offset=None, *, inference_params=None,
                **kwargs):
        self.calls.append(("stock", hidden_states, attention_mask, inference_context,
                           packed_seq_params, sequence_len_offset, inference_params, kwargs))
        return "stock output", None


class Config:
    deterministic_mode = False
'''


def stand_in_module(name="megatron.core.ssm.gated_delta_net", source=LAYER_SOURCE):
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


@pytest.fixture
def layer_module(monkeypatch):
    """The stand-in, importable as Megatron-Core's module; the integration reset around it."""
    module = stand_in_module()
    for name in ("megatron", "megatron.core", "megatron.core.ssm"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, megatron.LAYER_MODULE, module)
    monkeypatch.setattr(megatron, "_warned", set())
    monkeypatch.setattr(megatron, "_fused_gates", None)
    yield module
    megatron.disable()


def hidden(shape=(4096, 4, 2048), dtype="torch.bfloat16", device=Device("cuda", 0)):
    return Fake(shape, dtype, device)


def test_enable_patches_forward_and_disable_restores_it_exactly(layer_module):
    cls = layer_module.GatedDeltaNet
    stock = cls.__dict__["forward"]
    assert megatron.enable() is True
    assert megatron.is_enabled()
    assert cls.forward is not stock and cls.forward.qwen_gdn_stock is stock
    patched = cls.forward
    assert megatron.enable() is True and cls.forward is patched  # idempotent
    assert megatron.disable() is True
    assert cls.__dict__["forward"] is stock and not megatron.is_enabled()
    assert megatron.disable() is False


def test_an_inherited_forward_is_restored_by_removing_the_patch(layer_module):
    class Sub(layer_module.GatedDeltaNet):
        pass

    assert megatron.enable(Sub) is True
    assert "forward" in Sub.__dict__
    with pytest.raises(RuntimeError, match="Sub is patched; disable\\(\\) it first"):
        megatron.enable(layer_module.GatedDeltaNet)
    megatron.disable()
    assert "forward" not in Sub.__dict__
    assert Sub.forward is layer_module.GatedDeltaNet.__dict__["forward"]


UNKNOWN = [
    ("class _GDNBase:\n    pass\n", "it has no method _apply_gated_norm()"),
    ("    def forward(self, hidden_states, attention_mask, inference_context=None,\n"
     "                packed_seq_params=None, *, inference_params=None, **kwargs):\n"
     "        return None\n",
     "its forward() takes (self, hidden_states, attention_mask, inference_context, "
     "packed_seq_params, inference_params, kwargs)"),
    ("causal_conv1d = None\n", "its module has no causal_conv1d"),
]


@pytest.mark.parametrize("change, why", UNKNOWN, ids=["no norm", "forward", "no conv"])
def test_an_unknown_layer_is_refused_with_one_warning(layer_module, change, why):
    source = LAYER_SOURCE + "\n" + (change if not change.startswith("    ") else
                                    "class GatedDeltaNet(GatedDeltaNet):\n" + change)
    if change.startswith("class _GDNBase"):  # the layer without the norm method
        source = LAYER_SOURCE.replace("    def _apply_gated_norm(self, x, gate):\n"
                                      "        return x\n", "    pass\n")
    module = stand_in_module(source=source)
    stock = module.GatedDeltaNet.forward
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert megatron.enable(module.GatedDeltaNet) is False
        assert megatron.enable(module.GatedDeltaNet) is False
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert str(caught[0].message).startswith(
        f"qwen_gdn.megatron: {megatron.LAYER_MODULE}.GatedDeltaNet is not a GatedDeltaNet this "
        f"integration knows ({why}")
    assert str(caught[0].message).endswith("); the stock layer runs")
    assert module.GatedDeltaNet.forward is stock and not megatron.is_enabled()


def test_without_megatron_core_enable_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, megatron.LAYER_MODULE, None)
    with pytest.raises(ImportError, match="qwen_gdn.megatron.enable\\(\\): Megatron-Core is not "
                                          "importable"):
        megatron.enable()


STOCK_CALLS = [
    (dict(cp_size=2), {}, "context parallelism (cp_size 2) is not supported"),
    (dict(config=type("C", (), {"deterministic_mode": True})()), {},
     "deterministic_mode runs the layer's torch implementation"),
    (dict(recompute_norm_out=True), {}, "recompute of gdn_norm_out is not supported"),
    (dict(activation="gelu"), {}, "activation 'gelu' (the convolution takes silu)"),
    (dict(key_head_dim=64), {}, "head dims K = 64, V = 128 are not covered"),
    (dict(feat_dim_split=None, __delete__="feat_dim_split"), {},
     "the layer has no attribute 'feat_dim_split'"),
    ({}, dict(inference_context=object()), "inference is not supported"),
    ({}, dict(hidden_states=hidden(dtype="torch.float16")),
     "hidden_states has dtype torch.float16 (the kernels take bf16)"),
    ({}, dict(hidden_states=hidden(device=Device("cpu"))), "hidden_states is on cpu"),
]


@pytest.mark.parametrize("attributes, call, reason", STOCK_CALLS,
                         ids=[c[2][:30] for c in STOCK_CALLS])
def test_calls_it_does_not_cover_run_the_stock_forward(layer_module, monkeypatch, attributes, call,
                                                       reason):
    monkeypatch.setattr(megatron, "_device_not_covered", lambda x: None)
    monkeypatch.setattr(megatron, "_forward", lambda *a: pytest.fail("ours ran"))
    delete = attributes.pop("__delete__", None)
    layer = layer_module.GatedDeltaNet(**attributes)
    if delete:
        delattr(layer, delete)
    megatron.enable()
    args = dict(hidden_states=hidden(), attention_mask="mask", inference_context=None)
    args.update(call)
    packed = object()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            out = layer.forward(args["hidden_states"], args["attention_mask"],
                                args["inference_context"], packed, 7, extra=1)
            assert out == ("stock output", None)
    assert layer.calls == [("stock", args["hidden_states"], "mask", args["inference_context"],
                            packed, 7, None, {"extra": 1})] * 2
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert str(caught[0].message) == (f"qwen_gdn.megatron: {megatron.layer_not_covered(layer) or reason}"
                                      "; running Megatron-Core's own GatedDeltaNet forward")
    assert reason in str(caught[0].message)


def test_a_covered_call_runs_ours_with_the_layer_s_convolution(layer_module, monkeypatch):
    monkeypatch.setattr(megatron, "_device_not_covered", lambda x: None)
    seen = []
    monkeypatch.setattr(megatron, "_forward", lambda *a: seen.append(a) or ("ours", None))
    layer = layer_module.GatedDeltaNet()
    megatron.enable()
    x, packed = hidden(), object()
    assert layer.forward(x, None, packed_seq_params=packed) == ("ours", None)
    assert seen == [(layer, x, packed, layer_module.causal_conv1d)] and layer.calls == []


class Packed:
    def __init__(self, qkv_format="thd", **offsets):
        self.qkv_format = qkv_format
        for side in ("q", "kv"):
            for suffix in ("", "_padded"):
                name = f"cu_seqlens_{side}{suffix}"
                setattr(self, name, offsets.get(name))


def test_packed_offsets():
    x = hidden((4096, 1, 2048))
    cu, padded = Fake((5,), "torch.int32"), Fake((5,), "torch.int32")
    assert megatron.check_packed(x, None) is None
    assert megatron.check_packed(x, Packed("sbhd", cu_seqlens_q=cu)) is None
    assert megatron.check_packed(x, Packed(cu_seqlens_q=cu, cu_seqlens_kv=cu)) == (cu, cu)
    assert megatron.check_packed(x, Packed(cu_seqlens_q=cu, cu_seqlens_q_padded=padded,
                                           cu_seqlens_kv=cu, cu_seqlens_kv_padded=padded)) == (
        padded, padded)  # the padded offsets, as the stock layer takes them


BAD_PACKED = [
    (hidden((4096, 2, 2048)), Packed(cu_seqlens_q=Fake((5,))),
     "hidden_states: packed sequences (THD) need batch 1, got shape (4096, 2, 2048)"),
    (hidden((4096, 1, 2048)), Packed(), "packed_seq_params: qkv_format 'thd' without cu_seqlens_q"),
    (hidden((4096, 1, 2048)), Packed(cu_seqlens_q=Fake((1,))),
     "packed_seq_params.cu_seqlens_q: must be 1-D with N + 1 >= 2 offsets, got shape (1,)"),
    (hidden((4096, 1, 2048)), Packed(cu_seqlens_q=Fake((5,)), cu_seqlens_kv=Fake((4,))),
     "packed_seq_params: cu_seqlens_kv (shape (4,)) must equal cu_seqlens_q (shape (5,))"),
]


@pytest.mark.parametrize("x, packed, message", BAD_PACKED, ids=[b[2][:30] for b in BAD_PACKED])
def test_bad_packed_arguments_are_named(x, packed, message):
    with pytest.raises(ValueError) as info:
        megatron.check_packed(x, packed)
    assert str(info.value) == message
