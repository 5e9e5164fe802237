import { PortcullisConfigError } from '@portcullis/core';
import { functionOption, type OptionCheck } from '@portcullis/core/adapter';

/*
 * The option checks are core's (one set for every package); `func` is wrapped to carry the
 * function type each option expects.
 */
export {
  booleanOption as boolean,
  eitherOption as either,
  integerOption as integer,
  methodsOption as withMethods,
  nonEmptyStringOption as nonEmptyString,
  oneOfOption as oneOf,
} from '@portcullis/core/adapter';

/** A function (typed as `F`). */
export function func<F>(): OptionCheck<F> {
  return functionOption as OptionCheck<F>;
}

/** Throws the config error for `dispatch` unless it is a function. */
export function checkDispatch(dispatch: unknown, where: string): void {
  if (typeof dispatch !== 'function') {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_DISPATCH',
      'dispatch',
      `${where}: the dispatcher must be a function, got ${dispatch === null ? 'null' : typeof dispatch}`,
    );
  }
}
