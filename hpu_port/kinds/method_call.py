"""Kind ``method-call``: a method call becomes another, with a new first argument.

``x.cuda()``, ``model.cuda(rank)`` and ``x.cuda(non_blocking=True)`` become
``x.to("hpu")`` and ``x.to("hpu", non_blocking=True)``: the device argument is
dropped (one process drives one Gaudi), every other keyword is kept. With
``argument-name`` the new first argument is a qualified name instead
(``x.half()`` -> ``x.to(torch.bfloat16)``). With ``argument-method`` only a
call whose one argument is that method's call on another object matches, and
the object becomes the argument (``a.type(b.type())`` -> ``a.type_as(b)``). Without ``new-method`` the rule
only reports the call (``scaler.get_scale()``); with ``attribute = true`` it
reports reading the attribute instead (``tensor.is_cuda``). ``accepts`` lists
the parameters of the method's real signature, in order: a call passing other
keywords, or more positional arguments, is some other object's method of the same name
(``quantizer.cuda(tensor, meta=meta)``) and is reported without a fix. The
``keep-*`` keys of ``hpu_port.kinds._fp16`` report calls that must stay as
they are (``.half()`` in the fp16 arm of an fp16/bf16 choice). With
``not-after-calls`` (shell-style patterns of qualified names), a call whose
statement, or the statement before it, calls one of them is reported, not
rewritten: the receiver is then such an object (a bitsandbytes ``Params4bit``
quantises itself in ``.cuda()``, which a move to another device does not do).
With ``inside-autocast = true`` (report only) a call counts only inside a
`with` block of an autocast that computes in bfloat16 on Gaudi (`torch.autocast`,
`torch.cuda.amp.autocast`, or a name the module binds to one of them, with
no dtype or a bfloat16 one; float16 too with ``--fp16-to-bf16``), and not
on a receiver cast first (``.float()``, ``.double()``, ``.to(torch.float32)``)
or one that holds integers (``.argmax()``, ``.long()``...).
"""

from __future__ import annotations

import re

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._fp16 import FP16_KEYS, fp16_params
from hpu_port.triggers import Trigger


@register_kind
class MethodCall(Kind):
    name = "method-call"
    KEYS = {
        "method": (str, True),
        "new-method": (str, False),
        "device": (str, False),
        "argument-name": (str, False),
        "argument-method": (str, False),
        "device-keyword": (str, False),
        "attribute": (bool, False),
        "accepts": (list, False),
        "not-after-calls": (list, False),
        "inside-autocast": (bool, False),
        **FP16_KEYS,
    }
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        for key in ("method", "new-method"):
            if key in table and not table[key].isidentifier():
                raise ValueError(f"{key!r} must be a method name")
        if "new-method" in table and sum(key in table for key in ("device", "argument-name", "argument-method")) != 1:
            raise ValueError("with 'new-method', give exactly one of 'device', 'argument-name' or 'argument-method'")
        return {
            **table,
            **fp16_params(table),
            "device-keyword": table.get("device-keyword", "device"),
            "not-after-calls": string_list(table.get("not-after-calls", []), "not-after-calls"),
        }

    def triggers(self, rule):
        if rule.params.get("argument-method"):
            # `type` is in most files: only the call on another's call counts (`.type(b.type())`).
            method, inner = (re.escape(rule.params[key]).encode() for key in ("method", "argument-method"))
            return [Trigger(
                words=frozenset({rule.params["method"].encode()}),
                texts=frozenset({f".{rule.params['argument-method']}()".encode()}),
                pattern=re.compile(rb"\.%s\(\s*[^()\n]+\.%s\(\s*\)\s*\)" % (method, inner)),
            )]
        if rule.params.get("inside-autocast"):
            # The region may be entered through a name bound elsewhere in the file.
            return [Trigger(words=frozenset({rule.params["method"].encode()}), alongside=(Trigger(words=frozenset({b"autocast"})),))]
        return [Trigger(words=frozenset({rule.params["method"].encode()}))]
