/**
 * gateway-keys and gateway-attacks played again with warm gateways: every `runner exec` they start keeps two step
 * gateways made ahead (RUNNER_WARM=2, src/gateway/host/gateway-pool.ts), so each step's gateway is one the pool made
 * before it knew the step. What those files prove of a cold gateway holds of a warm one; gateway-keys checks the
 * step's gateway was a warm one. A file of the main lane like the others (its process's environment is its own).
 */
process.env.RUNNER_WARM = '2';
await import('./gateway-keys.test.js');
await import('./gateway-attacks.test.js');
