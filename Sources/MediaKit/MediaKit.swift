// MediaKit: JPEG decode/encode/overlay with libjpeg-turbo, and the GStreamer outputs of a camera.
//
// How the gateway wires one camera (every call is thread-safe; nothing here runs on the cooperative pool):
//
//     let runtime = try GStreamerRuntime(logger: logger)                  // once per process
//     let rtsp = try RTSPOutput(runtime: runtime, configuration: .init(address: "127.0.0.1", port: 8554))
//     let hls = HLSOutput(runtime: runtime, configuration: .init(root: "/var/lib/livegate/hls"))
//
//     // per camera
//     let annotate = try AnnotatedStream(name: id, hub: hub, overlay: true)  // the one shared decode
//     try rtsp.addCamera(id: id, hub: hub, annotate: annotate, fps: 30)     // /<id> H.264, /<id>/raw MJPEG
//     try hls.addCamera(id: id, annotate: annotate, fps: 30)                // <root>/<id>/index.m3u8
//     let recorder = Recorder(configuration: .init(cameraID: id, directory: dir), runtime: runtime)
//     try recorder.start(hub: hub)                                          // lossless lane, MKV + .af.jsonl
//
//     // one virtual webcam for the process, showing one camera at a time
//     let webcam = try VirtualWebcamOutput(runtime: runtime, configuration: .init(device: "/dev/video10"))
//     try webcam.start()                                                    // slate until a camera is shown
//     webcam.show(annotate)
//
//     // /metrics
//     rtsp.stats() + hls.stats() + [recorder.stats(), webcam.stats(camera: id), annotate.stats(camera: id)]
//
//     // shutdown: recorder.stop(); webcam.stop(); hls.stop(); rtsp.stop(); annotate.stop(); runtime.shutdown()
//
// Pipelines come from the templates in `pipelines/` (embedded in `PipelineTemplates`).
