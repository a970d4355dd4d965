// exports.js - every export of the Wasm core (wasm/abi.h) this package
// calls. The loader checks them all once when the core loads, so a core
// that does not match the package fails there, naming what is missing,
// instead of on some later call. tests/js/exports.test.js checks that this
// list is exactly the tpw_ names used in js/src and that abi.h declares each.
export const CORE_EXPORTS = Object.freeze([
  'tpw_adam_step', 'tpw_arange', 'tpw_attrs_init', 'tpw_attrs_layout', 'tpw_backend_capabilities',
  'tpw_backend_compile', 'tpw_backward', 'tpw_compile_check', 'tpw_compile_v', 'tpw_compiled_call_keyed',
  'tpw_compiled_explain', 'tpw_compiled_free', 'tpw_compiled_graph_text', 'tpw_compiled_last_module',
  'tpw_compiled_num_captures', 'tpw_compiled_num_entries', 'tpw_compiled_onnx_save', 'tpw_compiled_reasons',
  'tpw_compiled_set_input_names', 'tpw_cond', 'tpw_config_get', 'tpw_config_reset', 'tpw_config_set',
  'tpw_core_backend_contract_version', 'tpw_cross_entropy', 'tpw_declares_capabilities', 'tpw_free',
  'tpw_full', 'tpw_get_default_backend', 'tpw_graph_emit_wasm', 'tpw_graph_free', 'tpw_graph_onnx_save',
  'tpw_graph_parse', 'tpw_graph_print', 'tpw_graph_run', 'tpw_is_compiling', 'tpw_is_exporting', 'tpw_isa',
  'tpw_jit_kernel', 'tpw_jit_ready', 'tpw_last_error', 'tpw_last_status', 'tpw_list_backends',
  'tpw_list_mode_options', 'tpw_live_storage_bytes', 'tpw_live_storage_peak', 'tpw_live_tensors',
  'tpw_lookup_backend', 'tpw_malloc', 'tpw_mse_loss', 'tpw_note_shape_read', 'tpw_npy_decode',
  'tpw_npy_encode', 'tpw_onnx_model_explain', 'tpw_onnx_model_free', 'tpw_onnx_model_graph',
  'tpw_onnx_model_info', 'tpw_onnx_model_load', 'tpw_onnx_model_num_params',
  'tpw_onnx_model_num_specializations', 'tpw_onnx_model_param', 'tpw_onnx_model_param_name',
  'tpw_onnx_model_run', 'tpw_onnx_model_save', 'tpw_onnx_model_set_limit', 'tpw_onnx_model_set_option',
  'tpw_onnx_model_set_trainable', 'tpw_onnx_model_use_backend', 'tpw_onnx_tensor_decode', 'tpw_op',
  'tpw_op_arity', 'tpw_op_count', 'tpw_op_name', 'tpw_pool_has_threads', 'tpw_pool_jit_gen',
  'tpw_pool_jit_published', 'tpw_pool_worker', 'tpw_pool_worker_chunks', 'tpw_pool_worker_trapped',
  'tpw_random', 'tpw_rec_add_alias', 'tpw_rec_get_constant', 'tpw_rec_invoke', 'tpw_rec_lookup',
  'tpw_rec_mode', 'tpw_rec_register', 'tpw_rec_set_adapter', 'tpw_rec_set_constant', 'tpw_rec_set_key',
  'tpw_register_backend', 'tpw_reset', 'tpw_runner_call', 'tpw_runner_free', 'tpw_scalar',
  'tpw_set_capture_disabled', 'tpw_set_default_backend', 'tpw_set_grad_enabled', 'tpw_set_host_error',
  'tpw_sgd_step', 'tpw_tensor_assign', 'tpw_tensor_data_ptr', 'tpw_tensor_detach', 'tpw_tensor_dtype',
  'tpw_tensor_dup', 'tpw_tensor_free', 'tpw_tensor_grad', 'tpw_tensor_is_leaf', 'tpw_tensor_item',
  'tpw_tensor_ndim', 'tpw_tensor_new', 'tpw_tensor_numel', 'tpw_tensor_read', 'tpw_tensor_requires_grad',
  'tpw_tensor_set_grad', 'tpw_tensor_set_requires_grad', 'tpw_tensor_shape', 'tpw_tensor_version',
  'tpw_unregister_backend', 'tpw_version', 'tpw_while_loop'
]);
