// The --redis URL: what ioredis is given, and how the URL is shown (never with its password).

/** Where to connect, as ioredis options. */
export interface RedisTarget {
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  readonly db: number;
  readonly tls: boolean;
  /** The URL with its password replaced by `***`, for messages. */
  readonly shown: string;
}

/** The URL shown in messages when it could not even be parsed: nothing of it is repeated. */
export const UNPARSED = '(the --redis URL)';

/**
 * Parses `redis://[user[:password]@]host[:port][/db]` (`rediss://` for TLS). Throws an `Error`
 * whose message never contains the URL (it may hold a password) when `text` is not such a URL.
 */
export function parseRedisUrl(text: string): RedisTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('--redis must be a URL such as redis://127.0.0.1:6379');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new Error('--redis must start with redis:// or rediss:// (TLS)');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === '') throw new Error('--redis has no host');
  const port = url.port === '' ? 6379 : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (!/^\d{0,5}$/.test(path)) throw new Error('--redis: the path is a database number (/0)');
  if (url.search !== '' || url.hash !== '')
    throw new Error('--redis takes no query or fragment: user, password, host, port and /db only');
  const username = decode(url.username, 'user name');
  const password = decode(url.password, 'password');
  const auth =
    url.username === '' && url.password === ''
      ? ''
      : `${url.username}${url.password === '' ? '' : ':***'}@`;
  return {
    host,
    port,
    ...(username === '' ? {} : { username }),
    ...(password === '' ? {} : { password }),
    db: path === '' ? 0 : Number(path),
    tls: url.protocol === 'rediss:',
    shown: `${url.protocol}//${auth}${url.host.replace(/:\d+$/, '')}:${port}${path === '' ? '' : `/${path}`}`,
  };
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error(`--redis: the ${what} has a broken %-escape`);
  }
}
