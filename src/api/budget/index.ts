// The API budget per key (docs/api-client.md, "API budget"): the pure limit and admission, the per-process queue,
// and the stores that share a key's budget between processes.
export { MemoryBudgetBackend, MemoryKeyStore } from './memory-store.ts';
export { SharedBudgetBackend, limitPolicy, type SharedBudgetOptions } from './shared-backend.ts';
export { KeyBudget } from './key-budget.ts';
export { DEFAULT_BUDGET } from './types.ts';
export type { ApiBudget, BudgetBackend, BudgetSettings, BudgetStats, Outcome, Permit } from './types.ts';
