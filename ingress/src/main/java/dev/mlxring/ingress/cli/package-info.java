/**
 * The {@code mlx-ring} command line: {@link Main} dispatches to {@code serve} and {@code generate}
 * (each a composition root of its own) and parses their flags, refusing unknown flags and
 * malformed values by name with exit status 2. Entry point only: nothing else calls into it.
 */
package dev.mlxring.ingress.cli;
