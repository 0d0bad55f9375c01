"""Kind ``unused-suppression``: `# hpu-port: ignore` comments that suppressed nothing.

It runs after every other rule has reported, so it knows which suppression
comments were used. Turn it on with `--report-unused-ignores` (or select its
rule).
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind
from hpu_port.triggers import text_trigger


@register_kind
class UnusedSuppression(Kind):
    name = "unused-suppression"
    KEYS = {}
    MESSAGE_FIELDS = frozenset({"name"})
    FINISH_LAST = True

    READS_COMMENTS = True

    def triggers(self, rule):
        return [text_trigger("hpu-port:")]

    def finish(self, rules, ctx):
        if ctx.suppressions is None:
            return
        for directive in ctx.suppressions.unused():
            codes = ",".join(directive.codes)
            name = f"hpu-port: ignore[{codes}]" if codes else "hpu-port: ignore"
            for rule in rules:
                ctx.report_at(rule, directive.line, rule.message.format(name=name))
