/**
 * `value` with every object and array in it frozen, itself included, and returned (plain data without cycles:
 * the defaults, a converted JSON Schema). An object already frozen is taken as frozen throughout.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
