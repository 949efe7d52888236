"""The recipe protocol from Python (docs/oracle-protocol.md), over a real
server: an OracleStream that builds its points from recipes and answers
fused gradients follows the built-in session to 1e-12 as a stream that
gets every point as values does, for every algorithm an oracle family
serves, while the server names its new points by recipe and sends it
fewer bytes (f2obo, sf2obo: and it sends a third less up).
"""
import numpy as np
import pytest

import f2obo
from test_oracle_e2e import COMMON, STEPS, create_pair, evaluator

Y_BYTES = 8 * (6 * 3 + 3)


@pytest.mark.parametrize("algorithm", ["f2obo", "f2obo_sl", "af2obo", "sf2obo"])
def test_recipes_follow_the_built_in_session_and_move_less(start_server, algorithm):
    server = start_server()
    with f2obo.Client(server.address) as client:
        ref, new = create_pair(client, algorithm)
        old = client.create_session(family="oracle", x_dim=6, y_dim=6 * 3 + 3,
                                    **dict(COMMON, algorithm=algorithm))
        with f2obo.OracleStream(client, new.id) as a, f2obo.OracleStream(client, old.id) as b:
            b.recipes = False
            for i, (upper, inner) in enumerate(STEPS):
                expected = ref.step(upper=upper, inner=inner)
                down_a, down_b = a.stats.get("down_bytes", 0), b.stats.get("down_bytes", 0)
                recipes_a = a.stats.get("recipes", 0)
                for stream in (a, b):
                    got = stream.step(evaluator((upper, inner)), upper_rows=len(upper[1]),
                                      inner_rows=len(inner[1]))
                    np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-12)
                    assert abs(got.upper_loss_before - expected.upper_loss_before) <= 1e-12
                # The module-to-be's y is the session's, bit for bit.
                np.testing.assert_array_equal(a.y[0], new.decision().y)
                if i > 0 and algorithm != "af2obo":
                    # Down: done's y (values) and O(1) a recipe, vs y and z
                    # as values in every inner iteration.
                    new_down = a.stats["down_bytes"] - down_a
                    assert b.stats["down_bytes"] - down_b > new_down + Y_BYTES // 2
                    assert a.stats["recipes"] > recipes_a
            if algorithm in ("f2obo", "sf2obo"):
                assert a.stats["up_bytes"] < 0.8 * b.stats["up_bytes"]
        for s in (new, old):
            np.testing.assert_allclose(s.decision().y, ref.decision().y, rtol=0, atol=1e-12)
