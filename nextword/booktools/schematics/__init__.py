"""Schematic figures of the book, drawn from code with matplotlib so that they stay true to the library.

``core``        shared drawing pieces (boxes, arrows, token rows, a matrix as a grid of cells) and the
                figures of 6.1 (a recurrence against one attention layer as dependency graphs)
``attention``   figures of 6.2–6.4 (q/k/v through one head, the causal mask as a matrix, heads split
                and concatenated)
``positions``   figures of 6.5–6.7 (positional encodings, rotations, the decoder block)
``sphere``      figures of Part 5 (RMSNorm onto a sphere, the tangent plane, retraction against the
                exponential map, the von Mises–Fisher density on a circle)
"""
