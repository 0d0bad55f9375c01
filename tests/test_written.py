"""`written` spells names, dotted names and strings without generating code:
the text must be what libcst would print for the node, byte for byte."""

import libcst as cst

from hpu_port.visitors._references import written
from hpu_port.walk import descendants

SOURCE = '''
x = torch.cuda.is_available()
y = (torch).cuda
z = torch . cuda
w = (torch.cuda).synchronize()
v = (
    torch
    .cuda
)
s = rb"cuda" + 'hpu' + ("cpu")
t = f"cuda:{rank}".format(x)[0].attr
u = [a.b.c for a in (d.e)]
'''


def test_written_is_what_libcst_prints_for_every_node():
    module = cst.parse_module(SOURCE)
    printed = cst.Module([]).code_for_node
    nodes = [node for node in descendants(module) if isinstance(node, cst.BaseExpression)]
    assert len(nodes) > 40
    for node in nodes:
        assert written(node) == printed(node)
