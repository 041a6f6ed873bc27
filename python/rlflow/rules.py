"""Substitution rules: rlflow.rules.load("default" | "builtin" | path), generate(...), verify(...)."""

from ._core import rules as _rules

RuleSet = _rules.RuleSet
load = _rules.load
generate = _rules.generate
verify = _rules.verify

__all__ = ["RuleSet", "load", "generate", "verify"]
