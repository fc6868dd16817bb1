//! The deployer contract and the built-in deployers (mock, kubernetes-manifest, helm).
//! The implementations arrive with the orchestration and Kubernetes issues.
