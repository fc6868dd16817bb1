//! Component versions and their resources in OCI registries (FORMATS.md §3, §4, §6), with the
//! shared content-addressed cache: tag → manifest digest refs, blobs by digest (verified on
//! every read by the cache; nothing stored before it was verified).

use landscaper_sources::oci::{
    Descriptor, Limits, Reference, RegistrySession, registry_credentials,
};
use landscaper_sources::{ChartSpec, FetchContext, SourceError, SourcesConfig};

use crate::archive::build_artifact_set;
use crate::components::Components;
use crate::descriptor::access_field;
use crate::ocm::{self, ConfigCheck, OciDocument};
use crate::{
    Artifact, ComponentError, ComponentVersion, RepositoryContext, RepositoryKind, resource_access,
};

/// Accept header for component manifests and artifacts.
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// Who is asking (for error messages).
#[derive(Clone, Copy)]
struct Subject<'a> {
    component: &'a str,
    version: &'a str,
    resource: Option<&'a str>,
    repository: &'a str,
}

fn map_source_error(s: Subject<'_>, e: SourceError) -> ComponentError {
    let retryable = e.is_retryable();
    match e {
        SourceError::NotFound { detail, .. } if s.resource.is_none() => ComponentError::NotFound {
            component: s.component.to_string(),
            version: s.version.to_string(),
            repository: if detail.contains("offline") {
                format!(
                    "{} (offline: only the cache and the archives are used)",
                    s.repository
                )
            } else {
                s.repository.to_string()
            },
        },
        SourceError::DigestMismatch {
            what,
            expected,
            actual,
        } => ComponentError::DigestMismatch {
            component: s.component.to_string(),
            version: s.version.to_string(),
            what: match s.resource {
                Some(r) => format!("resource {r:?} ({what})"),
                None => what,
            },
            expected,
            actual,
        },
        other => {
            let subject = match s.resource {
                Some(r) => format!(
                    "resource {r:?} of component version {}:{}",
                    s.component, s.version
                ),
                None => format!("component version {}:{}", s.component, s.version),
            };
            ComponentError::Repository {
                repository: s.repository.to_string(),
                reason: format!("{subject}: {other}"),
                retryable,
            }
        }
    }
}

/// One repository of one registry, through the cache.
struct Session<'c> {
    components: &'c Components,
    session: RegistrySession<'c>,
    /// `registry/repository`, the cache key prefix.
    name: String,
    /// Digests of the manifests and blobs read (for pinning).
    touched: Vec<String>,
}

impl<'c> Session<'c> {
    fn new(
        components: &'c Components,
        reference: Reference,
        insecure: bool,
    ) -> Result<Self, SourceError> {
        let config = &components.config;
        let credentials = registry_credentials(&config.pull_secrets, &reference.registry)?;
        let limits = Limits {
            max_blob_bytes: config.max_blob_bytes,
            timeout: config.request_timeout,
            deadline: None,
        };
        let name = reference.name();
        let session =
            RegistrySession::new(config.transport.as_ref(), reference, credentials, limits)
                .with_plain_http(insecure)
                .with_ca_pem(components.registry_ca());
        Ok(Session {
            components,
            session,
            name,
            touched: Vec::new(),
        })
    }

    fn offline_error(&self, what: &str) -> SourceError {
        SourceError::NotFound {
            what: what.to_string(),
            detail: "not in the cache (offline)".into(),
        }
    }

    /// A manifest by tag or digest: from the cache (tag → digest ref, digest → verified blob),
    /// else from the registry (then cached).
    async fn manifest(&mut self, reference: &str) -> Result<(String, Vec<u8>), SourceError> {
        let cache = self.components.config.cache.clone();
        let by_digest = reference.starts_with("sha256:");
        let ref_key = format!("ocm-manifest:{}:{reference}", self.name);
        if let Some(cache) = &cache {
            let digest = if by_digest {
                Some(reference.to_string())
            } else {
                cache.get_ref(&ref_key)
            };
            if let Some(digest) = digest
                && let Some(bytes) = cache.get_blob(&digest)
            {
                self.touched.push(digest.clone());
                return Ok((digest, bytes));
            }
        }
        if self.components.config.offline {
            return Err(self.offline_error(&format!("{}:{reference}", self.name)));
        }
        let raw = self
            .session
            .manifest_bytes(reference, MANIFEST_ACCEPT)
            .await?;
        // Only what parses as a manifest or index is kept (a garbage answer must not stick
        // to the tag).
        ocm::parse_oci_document(&raw.bytes).map_err(|detail| SourceError::InvalidResponse {
            what: format!("{}:{reference}", self.name),
            detail,
        })?;
        if let Some(cache) = &cache {
            let stored = cache.put_blob(&raw.bytes);
            if stored.is_ok() && !by_digest {
                let _ = cache.put_ref(&ref_key, &raw.digest);
            }
        }
        self.touched.push(raw.digest.clone());
        Ok((raw.digest, raw.bytes))
    }

    /// A blob by digest (verified), through the cache.
    async fn blob(&mut self, layer: &ocm::Layer) -> Result<Vec<u8>, SourceError> {
        self.touched.push(layer.digest.clone());
        let cache = self.components.config.cache.clone();
        if let Some(cache) = &cache
            && let Some(bytes) = cache.get_blob(&layer.digest)
        {
            return Ok(bytes);
        }
        if self.components.config.offline {
            return Err(self.offline_error(&format!("{}@{}", self.name, layer.digest)));
        }
        let bytes = self
            .session
            .blob(&Descriptor {
                media_type: layer.media_type.clone(),
                digest: layer.digest.clone(),
                size: layer.size,
            })
            .await?;
        if let Some(cache) = &cache {
            let _ = cache.put_blob(&bytes);
        }
        Ok(bytes)
    }

    /// A manifest; an index is followed to its descriptor manifest (or first).
    async fn resolve_manifest(
        &mut self,
        reference: &str,
    ) -> Result<(String, OciDocument, Vec<u8>), SourceError> {
        let mut reference = reference.to_string();
        for _ in 0..4 {
            let (digest, bytes) = self.manifest(&reference).await?;
            let doc =
                ocm::parse_oci_document(&bytes).map_err(|detail| SourceError::InvalidResponse {
                    what: format!("{}:{reference}", self.name),
                    detail,
                })?;
            if let Some(next) = doc.descriptor_manifest() {
                reference = next.digest.clone();
                continue;
            }
            return Ok((digest, doc, bytes));
        }
        Err(SourceError::InvalidResponse {
            what: self.name.clone(),
            detail: "indexes nested too deeply".into(),
        })
    }

    /// The artifact at `reference` as an artifact set (tar.gz, `<manifest type>+tar+gzip`).
    async fn artifact_set(&mut self, reference: &str) -> Result<Artifact, SourceError> {
        let (digest, doc, bytes) = self.resolve_manifest(reference).await?;
        let OciDocument::Manifest {
            config,
            layers,
            media_type,
        } = doc
        else {
            return Err(SourceError::InvalidResponse {
                what: self.name.clone(),
                detail: "an index without manifests".into(),
            });
        };
        // The whole artifact is held in memory: bounded like one blob.
        let total: u64 = layers.iter().map(|l| l.size).sum::<u64>() + config.size;
        let limit = self.components.config.max_blob_bytes;
        if total > limit {
            return Err(SourceError::TooLarge {
                what: format!("{} ({} layers)", self.name, layers.len()),
                limit,
            });
        }
        let mut blobs = vec![(config.digest.clone(), self.blob(&config).await?)];
        for l in &layers {
            blobs.push((l.digest.clone(), self.blob(l).await?));
        }
        let mt = if media_type.is_empty() {
            crate::content::OCI_MANIFEST_MEDIA_TYPE.to_string()
        } else {
            media_type
        };
        let set = build_artifact_set(&mt, &digest, &bytes, &blobs);
        Ok(Artifact::new(
            format!("{}+tar+gzip", mt.trim_end_matches("+json")),
            set,
        ))
    }
}

fn oci_parts(ctx: &RepositoryContext) -> Option<(&str, Option<&str>, crate::NameMapping, bool)> {
    match &ctx.kind {
        RepositoryKind::Oci {
            base_url,
            sub_path,
            mapping,
            insecure,
        } => Some((base_url.as_str(), sub_path.as_deref(), *mapping, *insecure)),
        _ => None,
    }
}

fn reference_for(
    registry: &str,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
) -> Reference {
    Reference {
        registry: registry.to_string(),
        repository,
        tag,
        digest,
    }
}

pub(crate) async fn component_version(
    components: &Components,
    ctx: &RepositoryContext,
    name: &str,
    version: &str,
) -> Result<ComponentVersion, ComponentError> {
    let (base, sub_path, mapping, insecure) = oci_parts(ctx)
        .ok_or_else(|| ComponentError::repo(ctx.describe(), "not an OCI registry"))?;
    let repository = ocm::component_repository(sub_path, mapping, name);
    let described = format!("{base}/{repository}");
    let s = Subject {
        component: name,
        version,
        resource: None,
        repository: &described,
    };
    let tag = ocm::version_to_tag(version).ok_or_else(|| ComponentError::Repository {
        repository: described.clone(),
        reason: format!("component version {name}:{version}: the version is no semantic version"),
        retryable: false,
    })?;
    let reference = reference_for(base, repository, Some(tag.clone()), None);
    let mut session =
        Session::new(components, reference, insecure).map_err(|e| map_source_error(s, e))?;
    let (digest, doc, _) = session
        .resolve_manifest(&tag)
        .await
        .map_err(|e| map_source_error(s, e))?;
    let OciDocument::Manifest { config, layers, .. } = &doc else {
        return Err(ComponentError::repo(
            &described,
            "an index without manifests",
        ));
    };
    let config = match ocm::check_config(config) {
        ConfigCheck::NotAComponent(reason) if reason.contains("no media type") => {
            return Err(ComponentError::NotFound {
                component: name.to_string(),
                version: version.to_string(),
                repository: described,
            });
        }
        ConfigCheck::NotAComponent(reason) => {
            return Err(ComponentError::repo(
                &described,
                format!("{name}:{version}: {reason}"),
            ));
        }
        ConfigCheck::ReadConfig(c) => c,
    };
    let config_bytes = session
        .blob(&config)
        .await
        .map_err(|e| map_source_error(s, e))?;
    let layer = ocm::descriptor_layer_from_config(&config_bytes, layers)
        .map_err(|e| ComponentError::repo(&described, format!("{name}:{version}: {e}")))?;
    let layer_bytes = session
        .blob(&layer)
        .await
        .map_err(|e| map_source_error(s, e))?;
    let descriptor = ocm::descriptor_from_layer(&layer.media_type, &layer_bytes)
        .map_err(|e| ComponentError::repo(&described, format!("{name}:{version}: {e}")))?;
    let origin = format!("{name}:{version} in {described}");
    let mut cv = ComponentVersion::parse(&descriptor, &origin, ctx.clone())?;
    if cv.name != name || !ocm::version_matches(version, &cv.version) {
        return Err(ComponentError::invalid(
            &origin,
            format!(
                "invalid component version: the descriptor is {}:{}",
                cv.name, cv.version
            ),
        ));
    }
    components.record_blobs(&digest, std::mem::take(&mut session.touched));
    cv.manifest_digest = Some(digest);
    Ok(cv)
}

pub(crate) async fn resource(
    components: &Components,
    cv: &ComponentVersion,
    resource_name: &str,
) -> Result<Artifact, ComponentError> {
    let (access, ty) = resource_access(cv, resource_name)?;
    let base_type = ty
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let content_err = |reason: String| ComponentError::Content {
        component: cv.name.clone(),
        version: cv.version.clone(),
        resource: resource_name.to_string(),
        reason,
    };
    let ctx = &cv.repository_context;
    match base_type.as_str() {
        "localblob" | "localfilesystemblob" => {
            let (base, sub_path, mapping, insecure) = oci_parts(ctx).ok_or_else(|| {
                content_err(format!(
                    "local blob of a component found in {}",
                    ctx.describe()
                ))
            })?;
            let reference_text = access_field(&access, "localReference")
                .or_else(|| access_field(&access, "fileName"))
                .ok_or_else(|| content_err("localBlob without localReference".into()))?;
            let media_type =
                access_field(&access, "mediaType").unwrap_or("application/octet-stream");
            let repository = ocm::component_repository(sub_path, mapping, &cv.name);
            let described = format!("{base}/{repository}");
            let s = Subject {
                component: &cv.name,
                version: &cv.version,
                resource: Some(resource_name),
                repository: &described,
            };
            let reference = reference_for(base, repository, None, Some(reference_text.to_string()));
            let mut session = Session::new(components, reference, insecure)
                .map_err(|e| map_source_error(s, e))?;
            let nested = [
                crate::content::OCI_MANIFEST_MEDIA_TYPE,
                crate::content::DOCKER_MANIFEST_MEDIA_TYPE,
                ocm::OCI_INDEX_MEDIA_TYPE,
            ]
            .contains(&media_type);
            if nested && !reference_text.contains(',') {
                let set = session.artifact_set(reference_text).await;
                components.record_resource_blobs(cv, std::mem::take(&mut session.touched));
                return set.map_err(|e| map_source_error(s, e));
            }
            let mut out = Vec::new();
            for part in reference_text.split(',') {
                let layer = ocm::Layer {
                    media_type: media_type.to_string(),
                    digest: part.trim().to_string(),
                    size: 0,
                };
                out.extend(
                    session
                        .blob(&layer)
                        .await
                        .map_err(|e| map_source_error(s, e))?,
                );
            }
            components.record_resource_blobs(cv, session.touched);
            Ok(Artifact::new(media_type, out))
        }
        "ociartifact" | "ociregistry" | "ociimage" | "relativeocireference" => {
            let (image, insecure) = if base_type == "relativeocireference" {
                let (base, _, _, insecure) = oci_parts(ctx).ok_or_else(|| {
                    content_err("relativeOciReference outside an OCI registry".into())
                })?;
                let rel = access_field(&access, "reference")
                    .ok_or_else(|| content_err("no reference".into()))?;
                (format!("{base}/{rel}"), insecure)
            } else {
                let image = access_field(&access, "imageReference")
                    .ok_or_else(|| content_err("ociArtifact without imageReference".into()))?;
                // Plain HTTP for the artifact's registry only when it is the (insecure)
                // registry of the component itself.
                let insecure = oci_parts(ctx).is_some_and(|(base, _, _, insecure)| {
                    insecure && image.starts_with(&format!("{base}/"))
                });
                (image.to_string(), insecure)
            };
            let reference = Reference::parse(&image).map_err(|e| content_err(e.to_string()))?;
            let described = reference.name();
            let s = Subject {
                component: &cv.name,
                version: &cv.version,
                resource: Some(resource_name),
                repository: &described,
            };
            let at = reference
                .digest
                .clone()
                .or_else(|| reference.tag.clone())
                .unwrap_or_default();
            let mut session = Session::new(components, reference, insecure)
                .map_err(|e| map_source_error(s, e))?;
            let set = session.artifact_set(&at).await;
            components.record_resource_blobs(cv, session.touched);
            set.map_err(|e| map_source_error(s, e))
        }
        "helm" => helm_resource(components, cv, resource_name, &access).await,
        _ => Err(content_err(format!("unsupported access type {ty:?}"))),
    }
}

/// `helm` access: a chart in a classic Helm repository (sources' helm repository client).
async fn helm_resource(
    components: &Components,
    cv: &ComponentVersion,
    resource_name: &str,
    access: &serde_json::Value,
) -> Result<Artifact, ComponentError> {
    let content_err = |reason: String| ComponentError::Content {
        component: cv.name.clone(),
        version: cv.version.clone(),
        resource: resource_name.to_string(),
        reason,
    };
    let repo = access_field(access, "helmRepository")
        .ok_or_else(|| content_err("helm access without helmRepository".into()))?;
    let chart = access_field(access, "helmChart")
        .ok_or_else(|| content_err("helm access without helmChart".into()))?;
    let (name, version) = match chart.split_once(':') {
        Some((n, v)) => (n, v.to_string()),
        None => (
            chart,
            access_field(access, "version")
                .unwrap_or_default()
                .to_string(),
        ),
    };
    let media_type = crate::content::HELM_CHART_LAYER_MEDIA_TYPE;
    let key = format!("ocm-helm:{repo}|{name}|{version}");
    let cache = components.config.cache.clone();
    if let Some(cache) = &cache
        && let Some((digest, bytes)) = cache.get_by_key(&key)
    {
        components.record_resource_blobs(cv, vec![digest]);
        return Ok(Artifact::new(media_type, bytes));
    }
    if components.config.offline {
        return Err(content_err(format!(
            "helm chart {name} {version} from {repo} is not in the cache (offline)"
        )));
    }
    let spec: ChartSpec = serde_json::from_value(serde_json::json!({
        "helmChartRepo": {"helmChartRepoUrl": repo, "helmChartName": name, "helmChartVersion": version}
    }))
    .map_err(|e| content_err(format!("helm access: {e}")))?;
    let sources = landscaper_sources::ChartSources::new(
        components.config.transport.clone(),
        None,
        SourcesConfig {
            max_artifact_bytes: components.config.max_blob_bytes,
            request_timeout: components.config.request_timeout,
        },
    );
    let ctx = FetchContext {
        pull_secrets: components.config.pull_secrets.clone(),
        ..FetchContext::default()
    };
    let fetched = sources
        .fetch(&spec, &ctx)
        .await
        .map_err(|e| ComponentError::Repository {
            repository: repo.to_string(),
            retryable: e.is_retryable(),
            reason: format!(
                "resource {resource_name:?} of component version {}:{}: {e}",
                cv.name, cv.version
            ),
        })?;
    let landscaper_sources::ChartContent::Archive(bytes) = fetched.content else {
        return Err(content_err("helm repository returned no archive".into()));
    };
    if let Some(cache) = &cache
        && let Ok(digest) = cache.put_with_keys(&bytes, &[key])
    {
        components.record_resource_blobs(cv, vec![digest]);
    }
    Ok(Artifact::new(media_type, bytes))
}

/// Pushes a component version to an OCI registry in OCM's layout (FORMATS.md §4): the local
/// blobs as layers, the descriptor as tar layer, the config, the manifest under the tag.
/// For tests and tools (no client can write component-descriptor artifacts).
pub async fn push_component_version(
    components: &Components,
    ctx: &RepositoryContext,
    descriptor: &[u8],
    local_blobs: &[(String /* media type */, Vec<u8>)],
) -> Result<String, ComponentError> {
    let cv = ComponentVersion::parse(descriptor, "push", ctx.clone())?;
    let (base, sub_path, mapping, insecure) = oci_parts(ctx)
        .ok_or_else(|| ComponentError::repo(ctx.describe(), "not an OCI registry"))?;
    let repository = ocm::component_repository(sub_path, mapping, &cv.name);
    let described = format!("{base}/{repository}");
    let tag = ocm::version_to_tag(&cv.version).ok_or_else(|| {
        ComponentError::repo(
            &described,
            format!("{}: the version is no semantic version", cv.version),
        )
    })?;
    let s = Subject {
        component: &cv.name,
        version: &cv.version,
        resource: None,
        repository: &described,
    };
    let reference = reference_for(base, repository, Some(tag.clone()), None);
    let mut session =
        Session::new(components, reference, insecure).map_err(|e| map_source_error(s, e))?;
    let mut layers = Vec::new();
    let tar = ocm::descriptor_tar(descriptor);
    let tar_digest = session
        .session
        .push_blob(&tar)
        .await
        .map_err(|e| map_source_error(s, e))?;
    let descriptor_layer = serde_json::json!({"mediaType": ocm::DESCRIPTOR_TAR_MEDIA_TYPE, "digest": tar_digest, "size": tar.len()});
    layers.push(descriptor_layer.clone());
    for (media_type, bytes) in local_blobs {
        let digest = session
            .session
            .push_blob(bytes)
            .await
            .map_err(|e| map_source_error(s, e))?;
        layers.push(
            serde_json::json!({"mediaType": media_type, "digest": digest, "size": bytes.len()}),
        );
    }
    let config =
        serde_json::to_vec(&serde_json::json!({"componentDescriptorLayer": descriptor_layer}))
            .map_err(|e| ComponentError::repo(&described, e.to_string()))?;
    let config_digest = session
        .session
        .push_blob(&config)
        .await
        .map_err(|e| map_source_error(s, e))?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": crate::content::OCI_MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": ocm::CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config.len()},
        "layers": layers,
        "annotations": {"software.ocm.componentversion": format!("{}:{}", cv.name, cv.version),
                        "software.ocm.creator": "Landscaper appliance"},
    });
    let bytes = serde_json::to_vec(&manifest)
        .map_err(|e| ComponentError::repo(&described, e.to_string()))?;
    session
        .session
        .put_manifest(&tag, crate::content::OCI_MANIFEST_MEDIA_TYPE, &bytes)
        .await
        .map_err(|e| map_source_error(s, e))
}

/// `doctor`: whether the registry of an OCI context answers its API (with the pull secrets).
pub(crate) async fn ping(
    components: &Components,
    ctx: &RepositoryContext,
) -> Result<(), ComponentError> {
    let (base, sub_path, _, insecure) = oci_parts(ctx)
        .ok_or_else(|| ComponentError::repo(ctx.describe(), "not an OCI registry"))?;
    let repository = ocm::component_repository(sub_path, crate::NameMapping::UrlPath, "x")
        .trim_end_matches("/x")
        .to_string();
    let reference = reference_for(base, repository, Some("ping".into()), None);
    let mut session =
        Session::new(components, reference, insecure).map_err(|e| ComponentError::Repository {
            repository: ctx.describe(),
            retryable: e.is_retryable(),
            reason: e.to_string(),
        })?;
    session
        .session
        .ping()
        .await
        .map_err(|e| ComponentError::Repository {
            repository: ctx.describe(),
            retryable: e.is_retryable(),
            reason: e.to_string(),
        })
}
