import type { Logger, RawRequest, Warnings } from '@portcullis/core';
import {
  fetchRawRequest,
  requiredOption,
  unresolvedAddressWarning,
} from '@portcullis/core/adapter';
import type { ClientAddressOption } from './options.js';

/** The options `rawRequestOf` reads: every factory's. */
export type ClientOptions<R extends Request, A extends unknown[]> =
  | (ClientAddressOption<R, A> & { readonly logger?: Logger; readonly warnings?: Warnings })
  | undefined;

/**
 * Compiles how a wrapped handler finds the `RawRequest` core reads: the address from the required
 * `clientAddress(request, ...rest)`, the headers from the request.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_CLIENT_ADDRESS` when `clientAddress` is missing
 */
export function rawRequestOf<R extends Request, A extends unknown[]>(
  options: ClientOptions<R, A>,
  where: string,
): (request: R, rest: A) => RawRequest {
  const address = requiredOption(
    options?.clientAddress,
    'clientAddress',
    'a function (request, ...rest) => the client IP address; see the @portcullis/fetch README for Bun, Deno, Cloudflare and Next.js',
    where,
  );
  const warn = unresolvedAddressWarning(
    options?.logger,
    where,
    'clientAddress(request, ...rest) returned no address.',
    options?.warnings,
  );
  return function rawRequest(request, rest) {
    const found = address(request, ...rest);
    if (typeof found !== 'string') warn();
    return fetchRawRequest(request, typeof found === 'string' ? found : undefined);
  };
}
