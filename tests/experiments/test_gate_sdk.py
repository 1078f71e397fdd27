"""``gate=sdk``: what a user of the Loom seed's SDK gets (issue 12). The seed: "The SDK's
evolve sends gate_min_runs=5 and gate_margin=0.05 unless told otherwise", with the
server's default gate_mode "sprt", so the SPRT decides from run 5 on (the margin applies
only with gate_mode="margin"). The quickstart runs it beside the server's default."""

from __future__ import annotations

from experiments.build import build_scenario
from experiments.callbacks import sweep_params
from experiments.run import compose_job
from procmem_core.gates import SPRTGate


def test_gate_sdk_is_the_servers_sprt_deciding_from_run_5():
    sdk = build_scenario(compose_job("quickstart", ["case=gate_sdk"]))
    server = build_scenario(compose_job("quickstart", ["case=gate_ledger"]))
    assert sdk.gate == SPRTGate(min_drop=0.15, alpha=0.05, beta=0.20, max_runs=50, min_runs=5)
    assert server.gate == SPRTGate(min_runs=3)  # the server's default: gate_min_runs 3
    assert sdk.gate.min_runs == 5 and SPRTGate().min_runs == 3
    # the same world as the server-default case, so the two rows of the report compare
    assert sdk.ledger_size == server.ledger_size == 20


def test_the_quickstart_runs_the_sdk_gate():
    cases = str(sweep_params(compose_job("quickstart"))["case"]).split(",")
    assert "gate_sdk" in cases and "gate_ledger" in cases
