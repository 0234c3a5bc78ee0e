"""Schematic figures of the book, drawn from code with matplotlib so that they stay true to the library.

``core``        shared drawing pieces (boxes, arrows, token rows, a matrix as a grid of cells) and the
                figures of 6.1 (a recurrence against one attention layer as dependency graphs)
``attention``   figures of 6.2–6.4 (q/k/v through one head, the causal mask as a matrix, heads split
                and concatenated)
``positions``   figures of 6.5–6.7 (positional encodings, rotations, the decoder block)
``formulation`` figures of Part 2 (BPE merges as trees of pairs, the route through the formulation,
                the KL objective as the gap between two distributions)
``generation``  figures of Part 2, pages 2.6 and 2.8 (the search tree of greedy, exhaustive and beam
                decoding; a sequence masked and unmasked by discrete diffusion)
``dynamics``    figures of Part 3 (the gradient flow through one head, the routing/content feedback loop,
                the two training protocols, the route through a part)
``margins``     figures of 4.1–4.5 (the margin m = 1 − a·Var as regions of the plane with their boundary,
                the residual map folding back where the margin is negative)
``barrier``     figures of 4.7–4.9 (the log-barrier's landscape, noise against the embeddings' scale,
                the penalised objective along the regularisation path)
``sphere``      figures of Part 5 (RMSNorm onto a sphere, the tangent plane, retraction against the
                exponential map, the von Mises–Fisher density on a circle)
"""
