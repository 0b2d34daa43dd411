"""NumPy reference labs: every lesson computation in float64 with a hand-written backward pass.

One module per concept. Each backward pass is verified against central finite differences
(`seqlab.labs.gradcheck`). The `seqlab labs` command (`seqlab.labs.cli`) runs them all, and the
explorer calls the same functions, so these modules are the single source of truth for the math.
"""
