/**
 * Many models behind one server: the models a server may serve ({@link dev.mlxring.ingress.pool.ModelSpec}),
 * how a request's model name finds one ({@link dev.mlxring.ingress.pool.ModelNames}), loading on
 * first use and unloading in LRU order under a memory budget ({@link dev.mlxring.ingress.pool.ModelPool},
 * {@link dev.mlxring.ingress.pool.MemoryBudget}, {@link dev.mlxring.ingress.pool.ModelCost}).
 */
package dev.mlxring.ingress.pool;
