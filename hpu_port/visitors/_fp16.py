"""Where float16 must stay float16: the screens the float16 rules share.

With `--fp16-to-bf16`, float16 becomes bfloat16 where code computes in it.
Code that already chooses between the two (`if fp16: x.half() elif bf16:
x.bfloat16()`), that handles values of a tested dtype (`if x.dtype == torch.float16: ...`),
that implements `half()` itself or exports another runtime's fp16 format
(ONNX, CoreML) must keep float16: a rewrite there makes
both arms of a choice equal or answers a different question. So must
float16 that is a format rather than a precision: what goes to NumPy or into
a checkpoint a conversion tool writes, and the values a test passes and
checks. See ``hpu_port.kinds._fp16`` for the rule keys.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import libcst as cst

from hpu_port.branches import Held
from hpu_port.patterns import matches_any
from hpu_port.visitors._enclosing import enclosing
from hpu_port.visitors._references import is_main_test, last_name, written
from hpu_port.walk import children, contains


class Fp16Choices(
    enclosing("definitions", "FunctionDef", "ClassDef"), enclosing("blocks", "Module", "IndentedBlock")
):
    """Mixin for a visitor that keeps ``self.around`` (``Surroundings``): also
    keeps the enclosing functions and classes (``definitions``) and statement
    blocks (``blocks``), and answers why a float16 use must stay (``fp16_reason``)."""

    def init_fp16(self) -> None:
        # The enclosing functions and classes, outermost first.
        self.definitions: list[cst.CSTNode] = []
        self.blocks: list[cst.CSTNode] = []
        # Each `if` -> the block whose statement it is (or whose `if` it continues).
        self.block_of: dict[cst.If, cst.CSTNode] = {}
        # Function or module -> (last names of the calls it makes, whether it asserts).
        self._calls_of_unit: dict[cst.CSTNode, tuple[frozenset, bool]] = {}
        self._numpy_statements: dict[cst.CSTNode, bool] = {}
        self._source_text: Optional[str] = None
        self._matched_casts: dict[str, Optional[str]] = {}

    def visit_If(self, node) -> None:
        super().visit_If(node)
        if self.blocks:
            self.block_of.setdefault(node, self.blocks[-1])

    def fp16_reason(self, rule, node: cst.CSTNode) -> Optional[str]:
        """Why this use of float16 must stay, if it must."""
        params = rule.params
        for definition in reversed(self.definitions):
            name = definition.name.value
            if matches_any(name.lower(), params["keep-inside"]):
                return f"inside `{name}`, whose code is about what this rule replaces"
        role = self._format_role(params["roles"], node)
        if role is not None:
            return role
        if params["keep-under-tests-of"] and self._under_dtype_test(params["keep-under-tests-of"], node):
            return "code for values of the dtype its `if` tests; it must keep float16"
        if params["keep-beside"] and self._beside_other_dtype(params["keep-beside"]):
            return "one arm of a choice that has the other already"
        comment = self._comment_requiring_fp16()
        if comment is not None:
            return f"its comment says float16 is required here ({comment})"
        cast = self._cast_back_later(node)
        if cast is not None:
            return f"`{cast}` goes through float16 and back to float32 in this function: bfloat16 would keep fewer bits of it"
        return None

    def _format_role(self, roles: dict, node: cst.CSTNode) -> Optional[str]:
        """Why float16 here is a format to keep, not a precision to compute in."""
        if not any(roles.values()):
            return None  # a rule about something else than float16 (`.cuda()`)
        file_name = self.ctx.path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        if matches_any(file_name, roles["files"]):
            return "a conversion or export tool: float16 is the format it writes"
        if self._goes_to_numpy(self._statement()):
            return "the result goes to NumPy, which has no bfloat16"
        function = next((d for d in reversed(self.definitions) if isinstance(d, cst.FunctionDef)), None)
        if self._default_of_converter(function, roles["functions"], node):
            return "the default of a conversion function (`convert_weights_to_fp16`): its callers rely on float16"
        if self._cast_straight_back(node):
            return "cast to float16 and straight back to float32: it rounds values to a float16 format, not a precision to compute in"
        if self._loaded_on_the_cpu(node):
            return "loaded on the CPU (`device_map` names it): float16 is the format there, not a precision Gaudi computes in"
        if self._kept_by_a_dataset(function):
            return "data a `Dataset` loads and keeps when it is made: float16 is how it is stored; the model it feeds decides the precision"
        saved_by = self._saving_call(roles["saves"], node)
        if saved_by is not None:
            # `torch.save({k: v.half().cpu() ...}, path)` in a training loop: the
            # loop computes in its own precision, the file keeps its format.
            return f"what `{saved_by}` writes: float16 is the stored format"
        matched = self._casts_matched_values(roles["matched"])
        if matched is not None:
            return matched
        calls, asserts = self._calls_of(function or self.ctx.module)
        if (any(isinstance(n, (cst.Dict, cst.DictComp)) for n in self.around) or self._stored_under_a_key()) and _any_match(calls, roles["saves"]):
            return "a value of a dict this code saves (a checkpoint): float16 is the stored format"
        if function is not None and function.name.value.startswith("test") and (asserts or _any_match(calls, roles["checks"])):
            return "a value a test passes or checks: both keep float16 together; decide for Gaudi what the test compares"
        saves_only = _any_match(calls, roles["saves"]) and not _any_match(calls, roles["computes"])
        if saves_only and _any_match(calls, roles["loads"]):
            return "code that loads and saves weights and computes nothing: float16 is the checkpoint's format"
        if saves_only and self._moved_to_cpu():
            return "moved to the CPU to be saved by code that computes nothing: float16 is the stored format"
        return None

    def _stored_under_a_key(self) -> bool:
        """The statement stores the value under a key (`opt["weight"][key] = w.half()`)."""
        statement = self._statement()
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        return isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Subscript) for t in small.targets)

    def _kept_by_a_dataset(self, function: Optional[cst.FunctionDef]) -> bool:
        """`__init__` of a `Dataset` subclass, which loads (and caches) the data."""
        if function is None or function.name.value != "__init__":
            return False
        at = next((i for i, d in enumerate(self.definitions) if d is function), 0)
        owner = self.definitions[at - 1] if at > 0 else None
        return isinstance(owner, cst.ClassDef) and any(
            (last_name(base.value) or "").endswith("Dataset") for base in owner.bases
        )

    def _loaded_on_the_cpu(self, node: cst.CSTNode) -> bool:
        """`from_pretrained(path, torch_dtype=torch.float16, device_map={"": "cpu"})`."""
        call = next((n for n in reversed(self.around) if isinstance(n, cst.Call)), None)
        if call is None or not any(contains(arg, node) for arg in call.args):
            return False
        return any(
            arg.keyword is not None and arg.keyword.value == "device_map" and re.fullmatch(r"""\{?\s*(["']["']\s*:\s*)?["']cpu["']\s*\}?""", written(arg.value))
            for arg in call.args
        )

    def _saving_call(self, patterns, node: cst.CSTNode) -> Optional[str]:
        """The save call (`torch.save`, `save_file`) whose arguments hold ``node``."""
        for outer in reversed(self.around):
            if isinstance(outer, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return None
            if isinstance(outer, cst.Call) and outer is not node and any(contains(arg, node) for arg in outer.args):
                name = last_name(outer.func)
                if name and matches_any(name, patterns):
                    return written(outer.func)
        return None

    def _casts_matched_values(self, patterns) -> Optional[str]:
        """Why a dtype chosen here stays: the code also casts the values a
        loss matches with it (`targets = targets.to(self.data_type)`, box
        coordinates in pixels), which bfloat16's 8 bits would round."""
        if not patterns:
            return None
        statement = self._statement()
        small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        target = written(small.targets[0].target)
        if target not in self._matched_casts:
            self._matched_casts[target] = self._first_matched_cast(target, patterns)
        return self._matched_casts[target]

    def _first_matched_cast(self, target: str, patterns) -> Optional[str]:
        if self._source_text is None:
            self._source_text = self.ctx.source.decode("utf-8", "replace")
        text = self._source_text
        if target not in text:
            return None
        for receiver in re.findall(r"([A-Za-z_][\w.]*)\s*\.to\(\s*" + re.escape(target) + r"\s*[,)]", text):
            name = receiver.rsplit(".", 1)[-1]
            if matches_any(name.lower(), patterns):
                return (
                    f"`{target}` also casts `{receiver}`, values a loss matches: bfloat16 would round them "
                    "to 8 bits (cast only the inputs, or leave the autocast to pick the precision)"
                )
        return None

    def _moved_to_cpu(self) -> bool:
        """`w.to("cpu").to(torch.float16)`, `w.cpu().half()`: the statement takes the value off the device."""
        statement = self._statement()
        text = written(statement) if statement is not None else ""
        return ".cpu()" in text or '.to("cpu")' in text or ".to('cpu')" in text

    def _cast_straight_back(self, node: cst.CSTNode) -> bool:
        """`model.half().float()`: the float16 cast at once undone."""
        statement = self._statement()
        for call in _nodes(statement, cst.Call) if statement is not None else ():
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "float" and contains(func.value, node):
                return isinstance(func.value, cst.Call)
        return False

    def _default_of_converter(self, function: Optional[cst.FunctionDef], patterns, node: cst.CSTNode) -> bool:
        """Whether ``node`` is a parameter's default of a
        function named like a converter: a library's promise to its callers
        (in its body, the cast is the precision the model computes in)."""
        if function is None or not matches_any(function.name.value.lower(), patterns):
            return False
        params = function.params
        defaults = [p.default for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
        return any(default is node for default in defaults)

    def _goes_to_numpy(self, statement: Optional[cst.CSTNode]) -> bool:
        """Whether ``statement`` hands something to NumPy (`.numpy()`): read once per statement."""
        if statement is None:
            return False
        if statement not in self._numpy_statements:
            self._numpy_statements[statement] = ".numpy(" in written(statement)
        return self._numpy_statements[statement]

    def _calls_of(self, unit: cst.CSTNode) -> tuple[frozenset, bool]:
        if unit not in self._calls_of_unit:
            calls = _nodes(unit, cst.Call)
            names = frozenset(last_name(call.func) for call in calls)
            self._calls_of_unit[unit] = (names, bool(_nodes(unit, cst.Assert)))
        return self._calls_of_unit[unit]

    def _cast_back_later(self, node: cst.CSTNode) -> Optional[str]:
        """What is cast to float16 here, when the enclosing function also sends
        it to other processes and casts it back to float32
        (`bucket.to(dtype=torch.float16)`, `dist.broadcast(...)`,
        `bucket.to(dtype=torch.float32)`): compressed storage for a round
        trip, where bfloat16 keeps 8 bits of mantissa instead of float16's 11."""
        function = next((d for d in reversed(self.definitions) if isinstance(d, cst.FunctionDef)), None)
        cast = self._cast_call(node)
        if function is None or cast is None:
            return None
        names = {written(cast.func.value)} | self._assigned_from(cast)
        calls = _nodes(function.body, cst.Call)
        if not any(_collective(call) for call in calls):
            return None
        for call in calls:
            func = call.func
            if isinstance(func, cst.Attribute) and written(func.value) in names and _to_float32(call):
                return written(func.value)
        return None

    def _cast_call(self, node: cst.CSTNode) -> Optional[cst.Call]:
        """The call `x.to(torch.float16)`, `x.to(dtype=torch.float16)` or `x.half()`."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            return node
        statement = self._statement()
        for call in _nodes(statement, cst.Call) if statement is not None else ():
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "to" and any(arg.value is node for arg in call.args):
                return call
        return None

    def _assigned_from(self, cast: cst.Call) -> set:
        """`c` for `c = t.half()`: the cast result, when the statement is only that."""
        statement = self._statement()
        small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
        if isinstance(small, cst.Assign) and small.value is cast:
            return {written(target.target) for target in small.targets}
        return set()

    def _statement(self) -> Optional[cst.SimpleStatementLine]:
        return next((n for n in reversed(self.around) if isinstance(n, cst.SimpleStatementLine)), None)

    def _comment_requiring_fp16(self) -> Optional[str]:
        """The comment on or above the statement, or above a block of the
        function that holds it, when it says float16 is needed (`# downcast
        to fp16 - needed for 8bit serialization`; `# Model parameters should
        be cast to float16 in quantized P-Tuning setting.` above an `if`):
        the author chose the dtype on purpose."""
        statement = self._statement()
        if statement is None:
            return None
        comments = [line.comment.value for line in statement.leading_lines if line.comment is not None]
        if statement.trailing_whitespace.comment is not None:
            comments.append(statement.trailing_whitespace.comment.value)
        for block in reversed(self.around):
            if isinstance(block, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(block, (cst.If, cst.For, cst.While, cst.With)):
                comments += [line.comment.value for line in block.leading_lines if line.comment is not None]
        return next((c for c in comments if _FP16_WORD.search(c) and _REQUIRED_WORD.search(c)), None)

    def _under_dtype_test(self, dtypes: frozenset, node) -> bool:
        """Whether ``node`` is in the arm of a choice that runs for values of
        one of ``dtypes`` (`if x.dtype == torch.float16:`, or the `else` of
        `!=`): the arm that makes a value float16 (`if x.dtype !=
        torch.float16: x = x.half()`) computes in what the model does."""
        for choice in self.around:
            if isinstance(choice, (cst.If, cst.IfExp)) and not contains(choice.test, node):
                polarity = self._compares_with(choice.test, dtypes) or self._flag_compares_with(choice.test, dtypes)
                if polarity and (polarity > 0) == contains(choice.body, node):
                    return True
        return False

    def _flag_compares_with(self, test: cst.CSTNode, dtypes: frozenset) -> int:
        """``_compares_with`` for a name the enclosing function set to such a
        test (`needs_upcasting = vae.dtype == torch.float16 and ...`, then
        `if needs_upcasting:`), negated by `not`."""
        sign = 1
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, sign = test.expression, -1
        if not isinstance(test, cst.Name):
            return 0
        unit = next((d for d in reversed(self.definitions) if isinstance(d, cst.FunctionDef)), self.ctx.module)
        for assign in _nodes(unit, cst.Assign):
            if any(isinstance(t.target, cst.Name) and t.target.value == test.value for t in assign.targets):
                polarity = self._compares_with(assign.value, dtypes)
                if polarity:
                    return sign * polarity
        return 0

    def _compares_with(self, test: cst.CSTNode, dtypes: frozenset) -> int:
        """1 when ``test`` asks whether a value is of one of ``dtypes``, -1
        when it asks whether it is not, 0 when it compares with none."""
        for comparison in _nodes(test, cst.Comparison):
            for left, target in zip([comparison.left, *(t.comparator for t in comparison.comparisons)], comparison.comparisons):
                for operand in (left, target.comparator):
                    listed = isinstance(operand, (cst.List, cst.Tuple, cst.Set))
                    items = [e.value for e in operand.elements] if listed else [operand]
                    if any(self._qualified(item) in dtypes for item in items):
                        return -1 if isinstance(target.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)) else 1
        return 0

    def _qualified(self, node: cst.CSTNode) -> str:
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return ""
        hit = self.ctx.qualify(node)
        return hit[0] if hit is not None else ""

    def _beside_other_dtype(self, texts: list) -> bool:
        """Whether the innermost choice holding the use (the whole `if` chain)
        mentions one of ``texts``, or a statement beside it gives the same
        target, or returns, a value that does."""
        choice = next((n for n in reversed(self.around) if isinstance(n, cst.IfExp) or is_a_choice(n)), None)
        if isinstance(choice, cst.IfExp):
            return _mentions(choice, texts)
        statement = self._statement()
        anchor, block = statement, self.blocks[-1] if self.blocks else None
        if isinstance(choice, cst.If):
            anchor = self._chain_top(choice)
            if _mentions(anchor, texts):
                return True
            block = self.block_of.get(anchor)
            if block is not None and _beside_an_if_that_mentions(anchor, block, texts):
                return True
        if statement is None or block is None:
            return False
        outputs = _outputs(statement)
        if not outputs:
            return False
        body = block.body if isinstance(block.body, (list, tuple)) else ()
        return any(
            outputs & _outputs(line) and _mentions(line, texts)
            for sibling in body
            if sibling is not anchor
            for line in _nodes(sibling, cst.SimpleStatementLine)
        )

    def _chain_top(self, node: cst.If) -> cst.If:
        """The first `if` of the `if`/`elif` chain ``node`` belongs to."""
        index = self.around.index(node)
        while index > 0 and isinstance(self.around[index - 1], cst.If) and self.around[index - 1].orelse is node:
            index -= 1
            node = self.around[index]
        return node


def is_a_choice(node: cst.CSTNode) -> bool:
    """An `if` that chooses; a script's `if __name__ == "__main__":` block
    holds the whole script, whose other dtypes are no arm of it."""
    return isinstance(node, cst.If) and not is_main_test(node.test)


def _beside_an_if_that_mentions(anchor: cst.If, block, texts: list) -> bool:
    """Whether the statement right before or after ``anchor`` is an `if` that
    mentions one of ``texts``: two `if`s in a row that make one choice
    (`if args.bf16: model.to(torch.bfloat16)` then `if args.fp16: ...`)."""
    body = list(block.body) if isinstance(block.body, (list, tuple)) else []
    if anchor not in body:
        return False
    index = body.index(anchor)
    neighbours = body[max(0, index - 1):index] + body[index + 1:index + 2]
    return any(isinstance(n, cst.If) and _mentions(n, texts) for n in neighbours)


def hold_split_casts(ctx) -> None:
    """Withhold the float16 casts of an object's parts that would become
    bfloat16 while a cast of another part of the same object stays float16
    (`model.encoder.half()` rewritten, `model.decoder.half()` kept for a
    reason of its own): a model gets one precision, or a person decides.
    The parts of `self` are one object in a class; any other object's, in a
    function (or the module). Idempotent: each visitor that reports casts
    calls it when the walk ends."""
    casts = [
        hit for hit in ctx.hits()
        if hit.rule.option == "fp16-to-bf16" and hit.rule.kind in ("rename", "method-call") and hit.node is not None
    ]
    held = [hit for hit in casts if hit.kept is not None and hit.kept.reason == "dtype-role"]
    made = [hit for hit in casts if hit.has_fix]
    if not held or not made:
        return
    objects: dict = {}
    for hit in held:
        objects.setdefault(_cast_object(hit), hit)
    objects.pop(None, None)
    for hit in made:
        keeper = objects.get(_cast_object(hit))
        if keeper is not None:
            why = f"another part of `{_cast_object(hit)[1]}` stays float16 here: a model gets one precision; convert it whole or not at all"
            ctx.withdraw_fix(hit, Held("dtype-role", why))


def _cast_object(hit) -> Optional[tuple]:
    """(the unit it lives in, the object) whose part ``hit`` casts: `model`
    for `model.encoder.half()` or `model.decoder.to(torch.float16)`, `self`
    for `self.blocks.half()`; None when the cast has no named receiver."""
    path = _path_to(hit.statement, hit.node) if hit.statement is not None else []
    receiver = None
    if isinstance(hit.node, cst.Call) and isinstance(hit.node.func, cst.Attribute):
        receiver = hit.node.func.value
    else:
        call = next((n for n in reversed(path) if isinstance(n, cst.Call)), None)
        if call is not None and isinstance(call.func, cst.Attribute) and any(arg.value is hit.node for arg in call.args):
            receiver = call.func.value
    if not isinstance(receiver, (cst.Name, cst.Attribute)) or _nodes(receiver, cst.Call):
        return None
    root = written(receiver).split(".")[0]
    kinds = (cst.ClassDef,) if root == "self" else (cst.FunctionDef,)
    unit = next((n for n in reversed(path) if isinstance(n, kinds)), None)
    return (unit, root)


def _path_to(tree: cst.CSTNode, node: cst.CSTNode) -> list:
    """The nodes from ``tree`` down to ``node``'s parent (empty if not there)."""
    stack = [(tree, [])]
    while stack:
        current, path = stack.pop()
        if current is node:
            return path
        stack.extend((child, [*path, current]) for child in children(current))
    return []


_FP16_WORD = re.compile(r"\b(fp16|float16|half)\b", re.IGNORECASE)
_REQUIRED_WORD = re.compile(r"\b(needed|needs|required|requires|must|only works|should be)\b", re.IGNORECASE)


_FLOAT32 = frozenset({"torch.float32", "torch.float"})


_COLLECTIVES = frozenset({
    "broadcast", "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "reduce", "gather", "scatter", "send", "recv", "isend", "irecv",
})


def _collective(call: cst.Call) -> bool:
    """`dist.broadcast(...)`, `torch.distributed.all_reduce(...)`."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _COLLECTIVES:
        return False
    owner = written(func.value)
    return owner in ("dist", "comm") or owner.endswith(("distributed", ".comm"))


def _to_float32(call: cst.Call) -> bool:
    """`.float()`, `.to(torch.float32)` or `.to(dtype=torch.float32, ...)`."""
    name = call.func.attr.value
    if name == "float":
        return not call.args
    return name == "to" and any(written(arg.value) in _FLOAT32 for arg in call.args if arg.keyword is None or arg.keyword.value == "dtype")


def _outputs(statement: cst.SimpleStatementLine) -> set:
    """What a statement gives a value to: its assignment targets, as written,
    or `return`."""
    found = set()
    for small in statement.body:
        if isinstance(small, cst.Return):
            found.add("return")
        elif isinstance(small, cst.Assign):
            found.update(written(target.target) for target in small.targets)
        elif isinstance(small, cst.AnnAssign):
            found.add(written(small.target))
    return found


def _any_match(names: frozenset, patterns: tuple) -> bool:
    return any(matches_any(name, patterns) for name in names)


def _mentions(node: cst.CSTNode, texts: Iterable[str]) -> bool:
    code = written(node)
    return any(text in code for text in texts)


def _nodes(tree: cst.CSTNode, node_type: type) -> list:
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, node_type):
            found.append(node)
        stack.extend(children(node))
    return found
