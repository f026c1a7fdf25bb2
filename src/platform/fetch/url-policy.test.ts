import { describe, expect, it } from 'vitest';
import { UrlNotAllowedError } from './errors.js';
import { MAX_URL_LENGTH, assertPublicUrl, checkUrl } from './url-policy.js';

function refused(url: string, options?: Parameters<typeof checkUrl>[1]): UrlNotAllowedError {
  try {
    checkUrl(url, options);
  } catch (error) {
    expect(error).toBeInstanceOf(UrlNotAllowedError);
    return error as UrlNotAllowedError;
  }
  throw new Error(`${url} was accepted`);
}

describe('checkUrl (static pre-check, no DNS)', () => {
  it.each([
    'https://example.com/',
    'http://example.com/page?q=1#frag',
    'https://EXAMPLE.com./path',
    'https://sub.example.co.uk:8443/x',
    'http://8.8.8.8/',
    'http://[2001:4860:4860::8888]:8080/',
    'https://bücher.example/',
    'https://www.youtube.com/watch?v=dQw4w9WgXcQ',
  ])('accepts %s', (url) => {
    expect(assertPublicUrl(url)).toBeInstanceOf(URL);
  });

  it('returns what the fetcher needs', () => {
    expect(checkUrl('http://EXAMPLE.com./a')).toMatchObject({ host: 'example.com', literal: null, hostAllowed: false });
    expect(checkUrl('http://[::ffff:8.8.8.8]/')).toMatchObject({ host: '::ffff:808:808', literal: '8.8.8.8' });
    expect(checkUrl('http://0x08080808/')).toMatchObject({ host: '8.8.8.8', literal: '8.8.8.8' });
    expect(checkUrl('http://intranet./', { allowedPrivateHosts: ['INTRANET'] })).toMatchObject({
      host: 'intranet',
      hostAllowed: true,
    });
  });

  it.each([
    ['ftp://example.com/', 'scheme', 'The URL must use http or https.'],
    ['http://a:b@example.com/', 'userinfo', 'The URL must not contain a user name or password.'],
    ['http://example.com:0/', 'port', 'The URL has an invalid port.'],
    ['http://localhost/', 'host_name', 'The URL names an internal-only host, which is not allowed.'],
    [
      'http://printer/',
      'host_name',
      'The URL must name a public host with a domain (single-label names are internal).',
    ],
    ['http://127.1/', 'address', 'The URL points to a loopback address, which is not allowed.'],
    ['http://[fd00:ec2::254]/', 'address', 'The URL points to a cloud metadata address, which is not allowed.'],
    ['nope', 'invalid_url', 'The URL is not a valid absolute URL.'],
  ] as const)('refuses %s (%s)', (url, reason, detail) => {
    const error = refused(url);
    expect(error).toMatchObject({ status: 400, code: 'url_not_allowed', reason, detail });
  });

  it.each([
    ['http://127.0.0.1/', 'The URL redirects to a loopback address, which is not allowed.'],
    ['javascript:alert(1)', 'The URL redirects to a URL that is not http or https, which is not allowed.'],
    ['http://u:p@example.com/', 'The URL redirects to a URL with a user name or password, which is not allowed.'],
    ['http://x.localhost/', 'The URL redirects to an internal-only host, which is not allowed.'],
    ['http://printer/', 'The URL redirects to a single-label (internal) host name, which is not allowed.'],
    ['http://[::]/', 'The URL redirects to an unspecified address (0.0.0.0 or ::), which is not allowed.'],
  ])('words the refusal of a redirect to %s as such', (url, detail) => {
    expect(refused(url, { subject: 'redirect' }).detail).toBe(detail);
  });

  it('limits the length to 2048 characters', () => {
    const base = 'https://example.com/';
    expect(assertPublicUrl(base + 'a'.repeat(MAX_URL_LENGTH - base.length)).href).toHaveLength(MAX_URL_LENGTH);
    expect(refused(base + 'a'.repeat(MAX_URL_LENGTH - base.length + 1)).reason).toBe('too_long');
    // Percent-encoding during parsing can push a URL over the limit.
    expect(refused(base + ' '.repeat(700) + 'x').reason).toBe('too_long');
  });

  it('lets allow-listed private literals and names through', () => {
    expect(checkUrl('http://10.1.2.3/', { allowedPrivateHosts: ['10.0.0.0/8'] }).literal).toBe('10.1.2.3');
    expect(checkUrl('http://[fd00::5]/', { allowedPrivateHosts: ['fd00::/8'] }).literal).toBe('fd00::5');
    expect(checkUrl('http://LOCALHOST./', { allowedPrivateHosts: ['localhost'] }).hostAllowed).toBe(true);
    expect(refused('http://localhost/', { allowedPrivateHosts: ['127.0.0.0/8'] }).reason).toBe('host_name');
    expect(refused('http://169.254.169.254/', { allowedPrivateHosts: ['169.254.0.0/16'] }).reason).toBe('address');
  });
});
