import { describe, expect, it } from 'vitest';
import { type AddressCategory, addressCategory, checkAddress, parseAddress, parseAllowList } from './address-policy.js';

const category = (text: string) => {
  const ip = parseAddress(text);
  if (!ip) throw new Error(`not an address: ${text}`);
  return addressCategory(ip);
};

describe('addressCategory', () => {
  const table: Array<[string, AddressCategory]> = [
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['93.184.216.34', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.255', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.0.1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['100.64.0.1', 'carrier_grade_nat'],
    ['100.127.255.255', 'carrier_grade_nat'],
    ['100.128.0.1', 'public'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['192.0.0.8', 'protocol_assignment'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.1', 'documentation'],
    ['203.0.113.1', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.175.48.1', 'reserved'], // AS112
    // IPv4 notations inet_aton accepts
    ['2130706433', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['0x7f.0.0.1', 'loopback'],
    ['0x7f000001', 'loopback'],
    // IPv6
    ['2001:4860:4860::8888', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link_local'],
    ['febf::1', 'link_local'],
    ['fec0::1', 'site_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:20::1', 'protocol_assignment'], // ORCHIDv2
    ['100::1', 'reserved'],
    ['5f00::1', 'not_global'],
    ['1::1', 'not_global'],
    // IPv6 forms that embed IPv4 are judged by the IPv4 address
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', 'public'],
    // deprecated carriers: refused, named after a bad embedded address
    ['::127.0.0.1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::8.8.8.8', 'ipv4_compatible'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:8.8.8.8', 'ipv4_compatible'],
    ['64:ff9b:1::8.8.8.8', 'ipv4_compatible'],
    ['64:ff9b:1::10.0.0.1', 'private'],
  ];

  it.each(table)('%s is %s', (address, expected) => {
    expect(category(address)).toBe(expected);
  });
});

describe('parseAllowList and checkAddress', () => {
  it('parses names, CIDRs and single addresses', () => {
    const list = parseAllowList([' Intranet.Example. ', '10.0.0.0/8', 'fd00::/8', '192.168.1.5', '', '::ffff:172.16.0.0/108']);
    expect([...list.names]).toEqual(['intranet.example']);
    expect(list.ranges.map(([ip, bits]) => `${ip.toString()}/${bits}`)).toEqual([
      '10.0.0.0/8',
      'fd00::/8',
      '192.168.1.5/32',
      '172.16.0.0/12',
    ]);
  });

  it.each(['10.0.0.0/33', '10.0.0.0/', 'fd00::/129', 'http://x/', 'has space', 'semi;colon'])(
    'refuses the malformed entry %j',
    (entry) => {
      expect(() => parseAllowList([entry])).toThrow(/URL_FETCH_ALLOWED_PRIVATE_HOSTS/);
    },
  );

  const list = parseAllowList(['10.0.0.0/8', 'fd00::/8', '169.254.0.0/16', '0.0.0.0/0']);
  const verdict = (address: string, hostAllowed = false) => checkAddress(parseAddress(address)!, list, hostAllowed);

  it('allows non-public addresses inside a listed CIDR, in either family form', () => {
    expect(verdict('10.1.2.3')).toEqual({ allowed: true });
    expect(verdict('::ffff:10.1.2.3')).toEqual({ allowed: true });
    expect(verdict('fd12::1')).toEqual({ allowed: true });
    expect(verdict('169.254.1.1')).toEqual({ allowed: true });
  });

  it('refuses addresses outside the listed CIDRs', () => {
    const narrow = parseAllowList(['10.0.0.0/8']);
    expect(checkAddress(parseAddress('192.168.0.1')!, narrow)).toEqual({ allowed: false, category: 'private' });
    expect(checkAddress(parseAddress('127.0.0.1')!, narrow)).toEqual({ allowed: false, category: 'loopback' });
    expect(checkAddress(parseAddress('fd00::1')!, narrow)).toEqual({ allowed: false, category: 'unique_local' });
  });

  it('allows anything but the never-allowed categories for a host allowed by name', () => {
    const empty = parseAllowList([]);
    expect(checkAddress(parseAddress('127.0.0.1')!, empty, true)).toEqual({ allowed: true });
    expect(checkAddress(parseAddress('10.0.0.1')!, empty, true)).toEqual({ allowed: true });
    expect(checkAddress(parseAddress('169.254.169.254')!, empty, true)).toMatchObject({ allowed: false });
    expect(checkAddress(parseAddress('0.0.0.0')!, empty, true)).toMatchObject({ allowed: false });
  });

  it('never allows metadata, unspecified, multicast or broadcast, even inside 0.0.0.0/0', () => {
    expect(verdict('169.254.169.254')).toEqual({ allowed: false, category: 'metadata' });
    expect(verdict('fd00:ec2::254')).toEqual({ allowed: false, category: 'metadata' });
    expect(verdict('0.0.0.0')).toEqual({ allowed: false, category: 'unspecified' });
    expect(verdict('224.0.0.1')).toEqual({ allowed: false, category: 'multicast' });
    expect(verdict('255.255.255.255')).toEqual({ allowed: false, category: 'broadcast' });
  });
});
