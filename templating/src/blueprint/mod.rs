//! Blueprints: the document model, the blueprint filesystem, loading and validation, import
//! construction, and rendering of the deploy, export, subinstallation and import executions.
//!
//! ```text
//! BlueprintFs (inline yamlfs tree | directory) ──► Blueprint::from_fs (parse, default, validate,
//!     compile schemas, read templates once)
//! provided values ──► construct_imports (required/default/schema/target type) ──► Bindings
//! Bindings ──► render_deploy_executions / render_subinstallations / render_export_executions
//! ```

mod fs;
mod imports;
mod load;
mod model;
mod render;
mod yaml;

pub use fs::{BLUEPRINT_FILE_NAME, BlueprintFs, FsError, normalize_path};
pub use imports::{
    ImportError, ImportErrorKind, construct_imports, evaluate_import_data_mappings, validate_import,
};
pub use load::{
    Blueprint, BlueprintError, BlueprintIssue, ExecutionKind, ExecutionSource, PreparedExecution,
    decode_installation_template, default_blueprint, load_installation_template_file,
    validate_installation_template,
};
pub use model::{
    BLUEPRINT_KIND, BlueprintDocument, DefaultValue, ExportDefinition, INSTALLATION_TEMPLATE_KIND,
    ImportDefinition, ImportType, InstallationTemplate, InstallationTemplateBlueprint,
    LANDSCAPER_API_VERSION, SubinstallationTemplate, TemplateExecutor, TemplateType,
};
pub use render::{
    Bindings, DEPENDS_ON, DeployExecutionsOutput, DeployItemSpecification, ExportBindings,
    ExportExecutionsOutput, ImportExecutionsOutput, RenderError, SubinstallationsOutput,
    TEMPLATE_NAME, TargetReference, TargetResolutionError, decode_deploy_item, find_cycle, get_ci,
    merge_maps, render_deploy_executions, render_export_executions, render_import_executions,
    render_subinstallations, resolve_deploy_items, subinstallation_cycle,
    validate_installation_templates,
};
pub use yaml::{
    Locator, PathSegment, YamlError, display_path, go_to_json, parse_yaml, source_snippet,
};
