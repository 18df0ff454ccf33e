/**
 * What plan makes of a request's output constraint: the JSON Schema subset that is enforced,
 * forced and strict tool calls as a Lark grammar in the model's own tool-call syntax, and
 * {@link ConstraintCompiler}, which compiles either into the row's token constraint on the plan
 * thread (never exec's) and refuses what it cannot honour with a 400 naming the field. The
 * compiled constraint is handed over to exec with the plan and used there on the exec thread.
 */
package dev.mlxring.plan.constraint;
