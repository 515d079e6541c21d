//! Every role macro expands and type-checks against its generated world, and the
//! testing helpers reach each role's adapter.
use syncweave_plugin::{
    Context, Mutator, Namer, Object, ObjectName, PluginError, PluginInfo, Projector, Renderer,
    Value, json, testing,
};

mod mutator {
    use super::*;
    pub struct Echo;
    impl Mutator for Echo {
        fn info() -> PluginInfo {
            PluginInfo::new("echo", "0", "returns the object")
        }
        fn mutate(
            _: &Context,
            _: &Value,
            _: &mut Object<'_>,
            _: Option<&Object<'_>>,
        ) -> Result<(), PluginError> {
            Ok(())
        }
    }
    syncweave_plugin::mutator!(Echo);
}

mod namer {
    use super::*;
    pub struct ByCluster;
    impl Namer for ByCluster {
        fn info() -> PluginInfo {
            PluginInfo::new("by-cluster", "0", "names after the cluster")
        }
        fn name(ctx: &Context, _: &Value, object: &Value) -> Result<ObjectName, PluginError> {
            let name = object["metadata"]["name"]
                .as_str()
                .ok_or_else(|| PluginError::InvalidInput("metadata.name is missing".into()))?;
            Ok(ObjectName::namespaced(&ctx.cluster_name, name))
        }
    }
    syncweave_plugin::namer!(ByCluster);
}

mod projector {
    use super::*;
    pub struct Rename;
    impl Projector for Rename {
        fn info() -> PluginInfo {
            PluginInfo::new("rename", "0", "renames the group")
        }
        fn project(config: &Value, mut crd: Value) -> Result<Value, PluginError> {
            crd["spec"]["group"] = config["group"].clone();
            Ok(crd)
        }
    }
    syncweave_plugin::projector!(Rename);
}

mod renderer {
    use super::*;
    pub struct Split;
    impl Renderer for Split {
        fn info() -> PluginInfo {
            PluginInfo::new("split", "0", "one object per word")
        }
        fn validate_config(config: &Value) -> Result<(), String> {
            if config.is_null() {
                Ok(())
            } else {
                Err("takes no config".into())
            }
        }
        fn render(
            _: &Context,
            _: &Value,
            template: &str,
            values: &Value,
        ) -> Result<Vec<Value>, PluginError> {
            Ok(template
                .split_whitespace()
                .map(|w| json!({"kind": w, "cluster": values["ClusterName"]}))
                .collect())
        }
    }
    syncweave_plugin::renderer!(Split);
}

#[test]
fn each_role_round_trips_through_its_adapter() {
    let ctx = Context::fixture();
    let obj = json!({"metadata": {"name": "a"}});
    assert_eq!(
        testing::mutate::<mutator::Echo>(&ctx, &json!(null), &obj, None).unwrap(),
        obj
    );
    assert_eq!(
        testing::name::<namer::ByCluster>(&ctx, &json!(null), &obj).unwrap(),
        ObjectName::namespaced("fixture-cluster", "a")
    );
    assert!(matches!(
        testing::name::<namer::ByCluster>(&ctx, &json!(null), &json!({})),
        Err(PluginError::InvalidInput(_))
    ));
    assert_eq!(
        testing::project::<projector::Rename>(&json!({"group": "g"}), &json!({"spec": {}}))
            .unwrap(),
        json!({"spec": {"group": "g"}})
    );
    assert_eq!(
        testing::render::<renderer::Split>(&ctx, &json!(null), "A B", &json!({"ClusterName": "c"}))
            .unwrap(),
        vec![
            json!({"kind": "A", "cluster": "c"}),
            json!({"kind": "B", "cluster": "c"})
        ]
    );
    assert_eq!(
        syncweave_plugin::__private::validate_config("{\"x\":1}", renderer::Split::validate_config),
        Err("takes no config".into())
    );
}

#[test]
fn the_contract_is_embedded() {
    assert!(syncweave_plugin::WIT.contains("package syncweave:plugin@0.1.0;"));
}
