"""How each rule kind matches and fixes code, with libcst.

One module per kind, named as its declaration in ``hpu_port.kinds``; each
offers ``visitor(rules, ctx)``, the batchable visitor that records the kind's
findings and fixes on the file's context.
"""
