// Lint rules: the TypeScript recommended set, plus what this code base relies on (no floating promises is
// left to review: the type-checked rules double the run time for little gain here).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'docs/**', 'conformance/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', clearImmediate: 'readonly', URL: 'readonly', URLSearchParams: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', fetch: 'readonly', Response: 'readonly', Request: 'readonly', Headers: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', performance: 'readonly', globalThis: 'readonly', document: 'readonly', window: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Matching control characters is the point of several checks (headers, terminal text, log lines).
      'no-control-regex': 'off',
      // A closure that reads a variable before its one assignment needs `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  // Tests read arbitrary JSON off the wire; typing every probe of it would say nothing.
  { files: ['test/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);
