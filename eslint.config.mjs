// The linter: ESLint's and typescript-eslint's recommended rules, nothing more.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'build/**',
      'node_modules/**',
      '.tools/**',
      'examples/**/node_modules/**',
      // npm run build:chat-page writes the example chat page's bundle here.
      'examples/chat-page/dist/**',
      'test/fixtures/histories/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Node scripts in plain JavaScript.
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // Tests read untyped JSON answers (the HTTP API's) field by field.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    rules: {
      // A name starting with _ is deliberately unused (a destructured field left out).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
);
