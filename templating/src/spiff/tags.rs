//! Tags (`&tag:name`, `name::path`) and document references (`doc.N::path`).

use super::env::{Env, TagInfo};
use super::value::{Node, Value};

fn strip_tags(node: &Node) -> Node {
    let n = if node.tag().is_some() {
        node.set_tag(None)
    } else {
        node.clone()
    };
    match n.value() {
        Value::List(l) => n.replace_value(Value::list(l.iter().map(strip_tags).collect())),
        Value::Map(m) => n.replace_value(Value::map(
            m.iter().map(|(k, v)| (k.clone(), strip_tags(v))).collect(),
        )),
        _ => n,
    }
}

/// `State.SetTag`
pub(crate) fn set_tag(
    env: &Env,
    name: &str,
    node: &Node,
    path: &[String],
    local: bool,
    stream: bool,
) -> Result<(), String> {
    let name = name.replace(':', ".");
    let st = env.state();
    let mut tags = st.tags.borrow_mut();
    if let Some(old) = tags.get(&name) {
        if !old.local {
            return Err(format!(
                "duplicate tag {:?}: {} in foreign document",
                name,
                path.join(".")
            ));
        }
        if old.path.as_deref() != Some(path) {
            return Err(format!(
                "duplicate tag {:?}: {} <-> {}",
                name,
                path.join("."),
                old.path.clone().unwrap_or_default().join(".")
            ));
        }
    }
    tags.insert(
        name.clone(),
        TagInfo {
            name,
            node: strip_tags(node),
            path: Some(path.to_vec()),
            local,
            stream,
        },
    );
    Ok(())
}

/// `State.GetTags`
pub(crate) fn get_tags(env: &Env, name: &str) -> Vec<TagInfo> {
    let name = name.replace(':', ".");
    let st = env.state();
    let tags = st.tags.borrow();
    if let Some(n) = name.strip_prefix("doc.") {
        let Ok(mut i) = n.parse::<i64>() else {
            return Vec::new();
        };
        if i <= 0 {
            i += st.docno.get();
            if i <= 0 {
                return Vec::new();
            }
        }
        return tags.get(&format!("doc.{i}")).cloned().into_iter().collect();
    }
    let prefix = format!("{name}.");
    let mut list: Vec<TagInfo> = tags
        .values()
        .filter(|t| t.name == name || t.name.starts_with(&prefix))
        .cloned()
        .collect();
    list.sort_by(|a, b| a.level().cmp(&b.level()).then_with(|| a.name.cmp(&b.name)));
    list
}

/// `State.ResetStream`
pub(crate) fn reset_stream(env: &Env) {
    let st = env.state();
    st.tags.borrow_mut().retain(|_, t| !t.stream);
    st.docno.set(1);
}

/// `State.PushDocument`
pub(crate) fn push_document(env: &Env, doc: &Node) {
    let st = env.state();
    let no = st.docno.get();
    {
        let mut tags = st.tags.borrow_mut();
        let name = format!("doc.{no}");
        tags.insert(
            name.clone(),
            TagInfo {
                name,
                node: strip_tags(doc),
                path: None,
                local: false,
                stream: false,
            },
        );
        for t in tags.values_mut() {
            t.local = false;
        }
    }
    st.docno.set(no + 1);
}
