// How long a test or hook may run before it fails, unless it names its own limit (the third
// argument of `it`, the second of `beforeAll`…). jest.config.mjs gives it to jest, and
// jest-globals.js enforces it: jest-light-runner does not (docs/development.md#the-test-runner).
export const TEST_TIMEOUT_MS = 30_000;
