import { PortcullisConfigError } from '@portcullis/core';
import { type OptionSpec, parseOptions } from '@portcullis/core/adapter';

/**
 * What every rpc wrapper does first: refuses a `dispatch` that is not a function (core has no
 * check for a positional argument), then checks `options` against `spec` with core's rules.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_DISPATCH`, or the option's `ERR_PORTCULLIS_*`
 */
export function wrapperOptions<S extends OptionSpec>(
  dispatch: unknown,
  options: unknown,
  spec: S,
  where: string,
): ReturnType<typeof parseOptions<S>> {
  if (typeof dispatch !== 'function') {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_DISPATCH',
      'dispatch',
      `${where}: the dispatcher must be a function, got ${dispatch === null ? 'null' : typeof dispatch}`,
    );
  }
  return parseOptions(options, spec, where);
}
