// ESLint flat config: ESLint's and typescript-eslint's recommended rules, without type information (the type-checked
// set took over two minutes on a 2-core machine, too slow for `npm test`; `tsc --noEmit` already checks types).
// Formatting is prettier's (`.prettierrc.json`); the only layout rule here is `max-len`, for the lines prettier cannot
// wrap (long strings, template literals, comments).
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    // Build output, scratch, caches and generated folders (every folder .gitignore lists: specs write bundles into
    // .cache/scripts while eslint runs beside them in `npm test`), and recorded wire bytes.
    // test/lint-ignores.test.ts checks that each folder of .gitignore is here.
    ignores: [
      '.cache/',
      'dist/',
      'coverage/',
      'scratch/',
      'scratch2/',
      'examples/.readme-*/',
      'examples/.build-*/',
      'test/services/output/',
      'test/fixtures/',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // `any` is the deliberate erased type argument of generic containers (`Tool<any, R, C>`, `RunContext<any>`,
      // `Agent<any>`): `unknown` there breaks the contravariant parameters of heterogeneous tool and agent lists.
      // Tests cast hostile values with `as any` on purpose. tsc --strict still checks everything else.
      '@typescript-eslint/no-explicit-any': 'off',
      // A leading `_` marks a binding kept on purpose (a positional parameter, a field split off before a rest:
      // `const { $schema: _drop, ...schema } = ...`); a rest sibling omits the named fields.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Sanitizers and name checks match C0 control characters on purpose (cli/sanitize.ts, cli/store/names.ts,
      // node/walk.ts, session/checks.ts), and tests strip terminal escape sequences.
      'no-control-regex': 'off',
      // `declare module 'vitest' { interface Matchers<T> extends LoopctlMatchers<T> {} }` is how vitest's matcher
      // types are augmented.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      // A `let` read by a closure before its one assignment (a marble test binds the signal after building the
      // stream that cancels it) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Lines of at most 120 characters. Prettier wraps code at 120; this catches what it cannot wrap: long strings,
      // template literals, regular expressions and comments. A URL may run over, and so may the line that opens a
      // test (`it('...', () => {`): its title is one string, the name the test runner reports and a grep finds.
      'max-len': [
        'error',
        { code: 120, tabWidth: 2, ignoreUrls: true, ignorePattern: String.raw`^\s*(it|describe|test)(\.\w+)*[(\x60]` },
      ],
    },
  },
);
