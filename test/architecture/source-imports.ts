/**
 * What each file of src/ imports of src/, read from its syntax: static imports and re-exports (type-only
 * ones included), `import('…')` loads and `typeof import('…')` types. The architecture tests build on it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SRC = join(ROOT, 'src');

export function sources(dir: string = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier a file names, in any of the forms above. */
export function specifiersOf(file: string, text: string = readFileSync(file, 'utf8')): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [spec] = node.arguments;
      if (spec && ts.isStringLiteralLike(spec)) out.push(spec.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest));
  return out;
}

/** Each src file → the src files it imports (relative specifiers resolved, `.js` read as the `.ts` it is built from). */
export function importGraph(files: string[] = sources()): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      [
        ...new Set(
          specifiersOf(file)
            .filter((spec) => spec.startsWith('.'))
            .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, '.ts'))
            .filter((p) => known.has(p)),
        ),
      ],
    ]),
  );
}
