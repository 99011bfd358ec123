import LiveViewCore
import Testing
import TestSupport

@Suite struct AFGeometryTests {
    @Test func sonySpaceIsPerAxis() {
        // (2500,2000)-(4500,5000) on 0..10000 in a 640x480 JPEG.
        let r = CameraRect(x: 2500, y: 2000, width: 2000, height: 3000)
        let p = AFCoordinateSpace.sonyRemote.toPixels(r, imageWidth: 640, imageHeight: 480)
        #expect(p == PixelRect(x: 160, y: 96, width: 128, height: 144))
    }

    @Test func roundsHalfAwayFromZero() {
        #expect(AFCoordinateSpace.roundToPixel(2.5) == 3)
        #expect(AFCoordinateSpace.roundToPixel(-2.5) == -3)
        #expect(AFCoordinateSpace.roundToPixel(2.49) == 2)
        #expect(AFCoordinateSpace.roundToPixel(.nan) == 0)
        #expect(AFCoordinateSpace.roundToPixel(.infinity) == 0)
        #expect(AFCoordinateSpace.roundToPixel(1e300) == Int(Int32.max))
    }

    @Test func offsetOriginLikeNikonDisplayArea() {
        // Whole image 6048x3400 shown as a 1024x576 JPEG (Nikon ZR fixture box).
        let space = AFCoordinateSpace(originX: 0, originY: 0, width: 6048, height: 3400)
        let r = CameraRect(x: 3023 - 146.5, y: 1700 - 158, width: 293, height: 316)
        let p = space.toPixels(r, imageWidth: 1024, imageHeight: 576)
        #expect(p == PixelRect(x: 487, y: 261, width: 50, height: 54))
    }

    @Test func degenerateSpaceGivesEmptyRect() {
        let space = AFCoordinateSpace(width: 0, height: 100)
        #expect(space.toPixels(CameraRect(x: 1, y: 1, width: 1, height: 1), imageWidth: 10, imageHeight: 10)
            == PixelRect(x: 0, y: 0, width: 0, height: 0))
    }

    @Test func inverseRoundTripsAndClamps() {
        let space = AFCoordinateSpace.sonyRemote
        let c = space.toCamera(x: 320, y: 120, imageWidth: 640, imageHeight: 480)
        #expect(c.x == 5000)
        #expect(c.y == 2500)
        let outside = space.toCamera(x: -50, y: 9999, imageWidth: 640, imageHeight: 480)
        #expect(outside.x == 0)
        #expect(outside.y == 10000)
        let p = space.toPixels(CameraRect(x: c.x, y: c.y, width: 0, height: 0), imageWidth: 640, imageHeight: 480)
        #expect(p.x == 320 && p.y == 120)
    }

    @Test func clampingToImage() {
        #expect(PixelRect(x: -10, y: -10, width: 30, height: 30).clamped(toWidth: 100, height: 100)
            == PixelRect(x: 0, y: 0, width: 20, height: 20))
        #expect(PixelRect(x: 90, y: 95, width: 30, height: 30).clamped(toWidth: 100, height: 100)
            == PixelRect(x: 90, y: 95, width: 10, height: 5))
        #expect(PixelRect(x: 100, y: 0, width: 5, height: 5).clamped(toWidth: 100, height: 100) == nil)
        #expect(PixelRect(x: 10, y: 10, width: 0, height: 5).clamped(toWidth: 100, height: 100) == nil)
        #expect(PixelRect(x: 10, y: 10, width: -4, height: 5).clamped(toWidth: 100, height: 100) == nil)
    }
}
