// lib/targets.ts: which URLs the server may call (webhooks, contract tests).
import { describe, expect, test } from 'bun:test'
import { ownHosts, targetRefusal, type TargetPolicy } from '../lib/targets'

const policy: TargetPolicy = { allowLinkLocal: false, ownPorts: [9800, 9847], ownHosts: ['127.0.0.1'] }
const refused = (url: string, p = policy) => targetRefusal(new URL(url), p)

describe('targetRefusal', () => {
  test('loopback, private and public addresses on other ports are allowed', () => {
    for (const url of ['http://127.0.0.1:3000/', 'http://localhost:8080/', 'http://10.0.0.5/', 'http://192.168.1.2:9800/', 'https://example.com/', 'http://[::1]:81/', 'http://[fd12::1]/'])
      expect([url, refused(url)]).toEqual([url, null])
  })

  test("this server's own ports on any local name are refused, even with link-local allowed", () => {
    for (const url of ['http://127.0.0.1:9800/api/events/publish', 'http://localhost:9847/', 'http://127.0.0.2:9800/', 'http://[::1]:9800/', 'http://0.0.0.0:9800/', 'http://[::]:9847/'])
      for (const p of [policy, { ...policy, allowLinkLocal: true }]) expect(refused(url, p)).toContain('this server')
  })

  test('link-local, unspecified and metadata targets are refused unless allowed, in every spelling', () => {
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/', // 169.254.169.254 as one number
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://[febf::1]/',
      'http://0.0.0.0/',
      'http://[::]/',
      'http://metadata.google.internal./computeMetadata/v1/',
      'http://100.100.100.200/',
      'http://[fd00:ec2::254]/',
    ]
    for (const url of urls) {
      expect([url, refused(url)]).toEqual([url, expect.stringContaining('not allowed')])
      expect([url, refused(url, { ...policy, allowLinkLocal: true })]).toEqual([url, null])
    }
  })

  test('an IPv4 address written as IPv6 (mapped, translated, compatible, NAT64) is refused as that IPv4 address is', () => {
    const urls = [
      'http://[64:ff9b::a9fe:a9fe]/', // NAT64 well-known prefix
      'http://[64:ff9b::169.254.169.254]/',
      'http://[64:ff9b:1::a9fe:a9fe]/', // NAT64 local-use prefix
      'http://[64:ff9b:1:abcd::a9fe:a9fe]/',
      'http://[::ffff:0:a9fe:a9fe]/', // IPv4-translated
      'http://[::ffff:0:169.254.169.254]/',
      'http://[::a9fe:a9fe]/', // IPv4-compatible
      'http://[::169.254.169.254]/',
      'http://[0:0:0:0:0:ffff:a9fe:a9fe]/', // mapped, spelt out
      'http://[::ffff:6464:64c8]/', // 100.100.100.200
      'http://[64:ff9b::100.100.100.200]/',
      'http://[::ffff:0.0.0.0]/',
      'http://[64:ff9b::0.0.0.0]/',
    ]
    for (const url of urls) {
      expect([url, refused(url)]).toEqual([url, expect.stringContaining('not allowed')])
      expect([url, refused(url, { ...policy, allowLinkLocal: true })]).toEqual([url, null])
    }
    expect(refused('http://[64:ff9b::a9fe:a9fe]/')).toContain('169.254.169.254')
  })

  test('an IPv4 address written as IPv6 is allowed where the IPv4 address is, and is this server where it is', () => {
    for (const url of ['http://[::ffff:127.0.0.1]:3000/', 'http://[::ffff:10.0.0.5]/', 'http://[::ffff:0:10.0.0.5]/', 'http://[::10.0.0.5]/', 'http://[64:ff9b::8.8.8.8]/', 'http://[64:ff9b:1::8.8.8.8]/', 'http://[::ffff:192.168.1.2]:9800/'])
      expect([url, refused(url)]).toEqual([url, null])
    for (const url of ['http://[::ffff:127.0.0.1]:9800/', 'http://[::ffff:0:127.0.0.1]:9847/', 'http://[::127.0.0.2]:9800/', 'http://[::ffff:7f00:1]:9847/'])
      expect([url, refused(url)]).toEqual([url, expect.stringContaining('this server')])
    const boundToLan = { ...policy, ownHosts: ['192.0.2.2'] }
    for (const url of ['http://192.0.2.2:9800/', 'http://[::ffff:192.0.2.2]:9800/', 'http://[::ffff:0:c000:202]:9847/'])
      expect([url, refused(url, boundToLan)]).toEqual([url, expect.stringContaining('this server')])
    expect(refused('http://192.0.2.2:9801/', boundToLan)).toBeNull()
  })

  test("with a wildcard bind every local interface's address is the server itself", () => {
    const interfaces = () => ['127.0.0.1', '::1', '192.0.2.2', 'fd00::2', 'fe80::fc:ff:fe00:1']
    for (const bound of [['0.0.0.0', 'localhost'], ['::', 'localhost'], ['[::]']]) {
      const p = { ...policy, ownHosts: ownHosts(bound, interfaces) }
      for (const url of ['http://192.0.2.2:9800/', 'http://[fd00::2]:9847/', 'http://[fd00:0::2]:9800/', 'http://[fe80::fc:ff:fe00:1]:9800/', 'http://[::ffff:192.0.2.2]:9800/'])
        expect([bound, url, refused(url, p)]).toEqual([bound, url, expect.stringContaining('this server')])
      for (const url of ['http://192.0.2.2:3000/', 'http://[fd00::2]:3000/', 'http://192.0.2.3:9800/'])
        expect([bound, url, refused(url, p)]).toEqual([bound, url, null])
    }
    // A specific bind: the other interfaces are not this server.
    expect(ownHosts(['127.0.0.1', 'localhost'], interfaces)).toEqual(['127.0.0.1', 'localhost'])
    expect(refused('http://192.0.2.2:9800/', { ...policy, ownHosts: ownHosts(['127.0.0.1'], interfaces) })).toBeNull()
  })
})
