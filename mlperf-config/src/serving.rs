//! Rules about serving endpoints shared by the build (C0312) and the runtime (command-line overrides
//! of `llm_server_urls`), so both accept exactly the same URLs.

/// Checks one serving endpoint's base URL as `llm_server_urls` holds it: `http://` or `https://`, a
/// host (a name, an IPv4 address or a bracketed IPv6 address), an optional port 1-65535 and an
/// optional path (`http://10.0.0.1:8000/v1`). Credentials, queries, fragments and whitespace are
/// refused: endpoints are base URLs the harness appends its API's path to. `Err` says what is wrong,
/// as a phrase that completes "`<url>` ...".
pub fn check_server_url(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &url["http://".len()..]
    } else if lower.starts_with("https://") {
        &url["https://".len()..]
    } else {
        return Err("does not start with http:// or https://".to_string());
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or a control character".to_string());
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if tail.contains(['?', '#']) {
        return Err("has a query or fragment (an endpoint is a base URL)".to_string());
    }
    if authority.contains('@') {
        return Err("carries credentials (user@host)".to_string());
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((host, after)) = bracketed.split_once(']') else {
            return Err("has an IPv6 address without its closing `]`".to_string());
        };
        if host.is_empty() || !host.contains(':') || !host.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return Err(format!("has `[{host}]`, which is not an IPv6 address"));
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(|| format!("has `{after}` after its IPv6 address"))?),
        };
        (host, port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        if host.is_empty() {
            return Err("has no host".to_string());
        }
        if host.split('.').any(|label| label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            return Err(format!("has host `{host}`, which is not a host name or IPv4 address"));
        }
        (host, port)
    };
    debug_assert!(!host.is_empty());
    if let Some(port) = port {
        match port.parse::<u32>() {
            Ok(p) if (1..=65535).contains(&p) && port.chars().all(|c| c.is_ascii_digit()) => {}
            _ => return Err(format!("has port `{port}`, which is not a port number 1-65535")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_server_url;

    #[test]
    fn base_urls_with_a_host_pass() {
        for url in [
            "http://127.0.0.1:30000/v1",
            "https://frontend.cluster.local/v1",
            "http://localhost:8000",
            "HTTP://node-01_a:8000/v1/",
            "http://[::1]:8000/v1",
            "http://[fe80::1]",
            "http://gpu7",
        ] {
            assert_eq!(check_server_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn other_urls_fail_with_a_reason() {
        for (url, why) in [
            ("127.0.0.1:30000/v1", "http://"),
            ("ftp://host/v1", "http://"),
            ("http://", "no host"),
            ("http:///v1", "no host"),
            ("http://:8000/v1", "no host"),
            ("http://host:0/v1", "port"),
            ("http://host:65536", "port"),
            ("http://host:80a", "port"),
            ("http://host:+80", "port"),
            ("http://host:/v1", "port"),
            ("http://user:pw@host/v1", "credentials"),
            ("http://host/v1?x=1", "query"),
            ("http://host/v1#frag", "fragment"),
            ("http://ho st/v1", "whitespace"),
            ("http://host..a/v1", "host name"),
            ("http://[::1/v1", "closing"),
            ("http://[xyz]/v1", "IPv6"),
            ("http://[::1]x/v1", "after its IPv6"),
        ] {
            let err = check_server_url(url).expect_err(url);
            assert!(err.contains(why), "{url}: {err}");
        }
    }
}
