//! The kubeconfig clients use to reach the server.

use base64::Engine;

/// What goes into the kubeconfig's cluster and user entries.
pub struct KubeconfigParts<'a> {
    pub server: &'a str,
    pub ca_pem: Option<&'a str>,
    pub token: Option<&'a str>,
    pub basic: Option<(&'a str, &'a str)>,
    pub client: Option<(&'a str, &'a str)>,
}

/// A YAML scalar that survives any content (JSON strings are YAML double-quoted scalars).
fn scalar(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

pub fn render(parts: &KubeconfigParts<'_>) -> String {
    let mut cluster = format!("    server: {}\n", scalar(parts.server));
    if let Some(ca) = parts.ca_pem {
        cluster.push_str(&format!("    certificate-authority-data: {}\n", b64(ca)));
    }
    let mut user = String::new();
    if let Some(token) = parts.token {
        user.push_str(&format!("    token: {}\n", scalar(token)));
    }
    if let Some((name, password)) = parts.basic {
        user.push_str(&format!(
            "    username: {}\n    password: {}\n",
            scalar(name),
            scalar(password)
        ));
    }
    if let Some((cert, key)) = parts.client {
        user.push_str(&format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(cert),
            b64(key)
        ));
    }
    let user = if user.is_empty() {
        "  user: {}\n".to_string()
    } else {
        format!("  user:\n{user}")
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-test-server\n  cluster:\n{cluster}\
         contexts:\n- name: kube-test-server\n  context:\n    cluster: kube-test-server\n    user: kube-test-server\n    namespace: default\n\
         current-context: kube-test-server\nusers:\n- name: kube-test-server\n{user}preferences: {{}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_parseable_yaml() {
        let text = render(&KubeconfigParts {
            server: "https://127.0.0.1:1234",
            ca_pem: Some("-----BEGIN CERTIFICATE-----\n"),
            token: Some("t:o\"k"),
            basic: None,
            client: None,
        });
        let v: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(v["users"][0]["user"]["token"], "t:o\"k");
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:1234"
        );
        assert_eq!(v["current-context"], "kube-test-server");
    }
}
