"""icefloe.conformance.suite: the machinery that runs one program against an engine and the
executable model in lockstep, and judges it.

A program's steps (`lockstep`), how a black-box engine is interleaved (`blackbox`) and
faulted below its own wrappers (`transport`), what each operation asks of the engine
(`operations`), the reads checked against the model's rows (`readers`), the engine's
history as the history checker's input (`histories`), naming what a divergence breaks
(`divergence`), the model as the suite can drive it (`view`), profiles and bounds
(`profiles`), replay and shrinking outside Hypothesis (`runs`), the Hypothesis state
machine (`machine`), what a run started once (`backends`), its counts (`stats`), and one
whole run, directed programs then random search (`run`).

May import: icefloe.model, icefloe.impl, conformance.adapter, conformance.violation,
conformance.engines, conformance.testing (test infrastructure); `run` also the directed phase
(conformance.coverage), REST engines' driver (conformance.rest) and the verdict as data
(conformance.report.result).
Never imports: campaign, interop, demo.
"""
