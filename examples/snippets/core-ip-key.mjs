// "Client identity" (ipKey) in packages/core/README.md.
// snippet:start
import assert from 'node:assert/strict';
import { ipKey } from '@portcullis/core';

const keys = [
  ipKey('203.0.113.7'),
  ipKey('::ffff:203.0.113.7'), // IPv4-mapped: the IPv4 address
  ipKey('2001:db8:1:2:3:4:5:6'), // one bucket per /64: a host holds a whole /64
  ipKey('2001:db8:1:2:3:4:5:6', 48),
  ipKey('2001:db8:1:2:3:4:5:6', false), // the full address
  ipKey('203.0.113.007'), // not an address (leading zeros): build no key from it
];
console.log(keys.map(String).join('\n'));
assert.deepEqual(keys, [
  '203.0.113.7',
  '203.0.113.7',
  '2001:db8:1:2::/64',
  '2001:db8:1::/48',
  '2001:db8:1:2:3:4:5:6',
  undefined,
]);
// snippet:end
