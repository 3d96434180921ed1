//! Who a request comes from: its peer's address or, when the peer is one of
//! `limits.trusted_proxies`, the address that proxy forwards (`Forwarded:
//! for=`, RFC 7239, else `X-Forwarded-For`). Each proxy appends the address
//! it got the request from, so the list is read from the right: the first
//! address not of a trusted proxy is the client; what lies left of it came
//! from the client and proves nothing. From any other peer those headers are
//! ignored.

use std::net::{IpAddr, Ipv6Addr};

use axum::http::{HeaderMap, HeaderName, header::FORWARDED};

use crate::config::IpNet;

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The client's address; see the module documentation.
pub(crate) fn client_ip(headers: &HeaderMap, peer: IpAddr, trusted: &[IpNet]) -> IpAddr {
    let peer = canonical(peer);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<Option<IpAddr>> = if headers.contains_key(FORWARDED) {
        headers
            .get_all(FORWARDED)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|element| {
                element.split(';').find_map(|pair| {
                    let (key, value) = pair.split_once('=')?;
                    key.trim().eq_ignore_ascii_case("for").then(|| node(value.trim().trim_matches('"')))
                })?
            })
            .collect()
    } else {
        headers
            .get_all(X_FORWARDED_FOR)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|hop| node(hop.trim()))
            .collect()
    };
    let mut client = peer;
    for hop in hops.into_iter().rev() {
        match hop.map(canonical) {
            Some(ip) if is_trusted(ip) => client = ip,
            Some(ip) => return ip,
            // `unknown`, an obfuscated name or garbage: the last address
            // vouched for is as far as the chain can be followed.
            None => return client,
        }
    }
    client
}

/// Whether the client is on this machine (loopback).
pub(crate) fn is_local(ip: IpAddr) -> bool {
    canonical(ip).is_loopback()
}

/// The key a client's budget is kept under: its address, or for IPv6 its
/// /64 network (one machine is commonly given a whole /64).
pub(crate) fn budget_key(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        v4 => v4,
    }
}

/// IPv4 addresses mapped into IPv6 (a dual-stack socket) as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A node as proxies write it: `192.0.2.1`, `192.0.2.1:4711`,
/// `[2001:db8::1]`, `[2001:db8::1]:4711` or a bare IPv6 address.
fn node(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse() {
        return Some(ip);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    text.rsplit_once(':')?.0.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let xff = headers(&[("x-forwarded-for", "198.51.100.7, 203.0.113.9")]);
        assert_eq!(client_ip(&xff, ip("127.0.0.1"), &trusted), ip("203.0.113.9"), "rightmost untrusted hop");
        assert_eq!(client_ip(&xff, ip("192.0.2.1"), &trusted), ip("192.0.2.1"), "untrusted peer: header ignored");
        assert_eq!(client_ip(&xff, ip("127.0.0.1"), &[]), ip("127.0.0.1"), "no trusted proxies");
        // A forged entry left of what a chain of trusted proxies appended.
        let chain = headers(&[("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.1.2.3")]);
        assert_eq!(client_ip(&chain, ip("::ffff:127.0.0.1"), &trusted), ip("203.0.113.9"));
        let lines = headers(&[("x-forwarded-for", "6.6.6.6"), ("x-forwarded-for", "203.0.113.9:5555")]);
        assert_eq!(client_ip(&lines, ip("127.0.0.1"), &trusted), ip("203.0.113.9"), "header lines in order, port");
        let forwarded = headers(&[
            ("forwarded", r#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https"#),
            ("x-forwarded-for", "198.51.100.7"),
        ]);
        assert_eq!(client_ip(&forwarded, ip("10.9.9.9"), &trusted), ip("2001:db8:cafe::17"), "Forwarded first");
        let unknown = headers(&[("forwarded", "for=unknown;by=10.0.0.1")]);
        assert_eq!(client_ip(&unknown, ip("10.0.0.1"), &trusted), ip("10.0.0.1"));
        let all_trusted = headers(&[("x-forwarded-for", "10.0.0.2")]);
        assert_eq!(client_ip(&all_trusted, ip("127.0.0.1"), &trusted), ip("10.0.0.2"));
        assert_eq!(client_ip(&HeaderMap::new(), ip("127.0.0.1"), &trusted), ip("127.0.0.1"));
    }

    #[test]
    fn a_forwarded_client_is_not_local() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let xff = headers(&[("x-forwarded-for", "203.0.113.9")]);
        assert!(!is_local(client_ip(&xff, ip("127.0.0.1"), &trusted)));
        assert!(is_local(client_ip(&xff, ip("127.0.0.1"), &[])));
        assert!(is_local(ip("::ffff:127.0.0.1")) && is_local(ip("::1")));
    }

    #[test]
    fn ipv6_clients_are_kept_by_their_64() {
        assert_eq!(budget_key(ip("2001:db8:1:2:aaaa::1")), budget_key(ip("2001:db8:1:2:bbbb::9")));
        assert_ne!(budget_key(ip("2001:db8:1:2::1")), budget_key(ip("2001:db8:1:3::1")));
        assert_eq!(budget_key(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
    }
}
